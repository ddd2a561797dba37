/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The planner's second step: how frames cross, chosen by timing whole
 * frames submit to done on slot 0 (whole, read in place, in C chunks), and
 * with it between the layers and a whole-MLP kernel that lost to them on
 * the MLP alone. */
#include <errno.h>
#include <glib.h>

#include "frame_path.h"
#include "gpu_timer.h"
#include "log.h"
#include "planner_steps.h"

#define FRAME_REPS 15
#define FRAME_WARMUP 2
/* Chunks or reading in place must beat a whole frame by this much to be
 * used: less is noise. The layers must beat a whole-MLP kernel by as much
 * on the frame: timed back to back they can tie, but a paced frame's
 * thread pays for each of the chain's calls, and the whole kernel makes
 * one. */
#define GAIN 0.95

static const unsigned chunk_choices[] = { 2, 3, 4, 5, 6, 8, 9, 10, 12, 15, 16 };
/* Chunks, and reading frames over 1 MiB in place, are for latency: with at
 * most two slots they gave more frames/s too, but where the MLP is the
 * slowest stage (deep at tf32: 5,360 frames/s in 5 chunks at two slots,
 * 6,741 whole), unless they keep the period (throughput_period); with
 * three or more, whole frames by DMA gave more, as frames of different
 * slots overlap already. A kernel that reads a large frame over the bus
 * holds its SMs while it waits (docs/PERFORMANCE.md, "How frames
 * cross"). */
#define IN_PLACE_MAX_BYTES (1u << 20)
#define LATENCY_PLANS_MAX_SLOTS 2
/* Layer by layer, a frame read in place keeps the first layer's SMs
 * waiting on the bus for as long as the copy would take the copy engine,
 * and another slot's GEMM needs them: one slot only. */
#define IN_PLACE_LAYERS_MAX_SLOTS 1

typedef struct {
  const pp_planner *p;
  pp_frame_path path;
} frame_run;

static int
run_frame(void *data, cudaStream_t stream, char **msg)
{
  frame_run *f = data;
  pp_cuda_slot *s = f->p->slot;
  (void) stream;
  return pp_frame_enqueue(&f->path, s, s->staging_in, NULL, s->staging_out, msg);
}

/* Median µs, submit to done, of a frame from slot 0's staging memory as
 * `plan` runs it, slot 0's graphs captured for it. */
static int
time_frames(const pp_planner *p, const pp_cuda_plan *plan, double *us, char **msg)
{
  pp_cuda_slot *s = p->slot;
  char *why = NULL;
  if (pp_cuda_slot_capture(s, p->exec, plan, p->layout->n, &why) < 0) {
    pp_log(PP_LOG_DEBUG, "plan", "timing frames without graphs: %s", why);
    g_free(why);
  }
  /* A batch is timed as one frame of all its samples. */
  frame_run f = { p,
                  { .plan = plan,
                    .exec = p->exec,
                    .layout = p->layout,
                    .o = p->weights->o,
                    .one = p->layout,
                    .batch = 1 } };
  pp_frame_path_set_chunks(&f.path, &s->buf.x);
  s->timed = false;
  s->signal_seq = 0;
  return pp_gpu_time_roundtrip(s->stream, pp_frame_last_stream(&f.path, s, s->staging_in),
                               run_frame, &f, p->quick ? 0 : FRAME_WARMUP,
                               pp_planner_reps(p, FRAME_REPS), us, msg);
}

/* The chunk algorithms of the plan's cuBLAS layers, tuned (or, given, set). */
static int
chunk_gemms(const pp_planner *p, pp_cuda_plan *plan, char **msg)
{
  const uint32_t rows = p->layout->n / plan->chunks;
  for (unsigned i = 0; i < plan->n_layers && plan->whole == PP_N_PATHS; i++) {
    pp_layer_plan *l = &plan->layers[i];
    if (!pp_cuda_path_tunes_gemm(l->path))
      continue;
    double us;
    const int rc = l->has_chunk_algo ? pp_mlp_exec_make_gemm(p->exec, i, l->path, l->pieces, rows,
                                                             &l->chunk_algo, msg)
                                     : pp_planner_tune_gemm(p, plan, i, rows, &us, msg);
    if (rc < 0)
      return rc;
  }
  return 0;
}

/* The period a plan's frames would keep with the planner's slots, µs:
 * the slowest of the GPU's MLP for a frame (mlp_us: C chunks' worth for
 * chunks, each on fewer rows and so less efficient), the frame's copies
 * (copies_us: a whole frame's time less its MLP, the same for every way
 * frames cross) and one frame's time shared by the slots. A model, for
 * comparing two ways of crossing, not a prediction. */
static double
throughput_period(const pp_planner *p, double frame_us, double mlp_us, double copies_us)
{
  return MAX(MAX(mlp_us, copies_us), frame_us / p->n_slots);
}

static bool
in_place_worth_trying(const pp_planner *p, const pp_cuda_plan *plan)
{
  const bool small = p->layout->frame_bytes <= IN_PLACE_MAX_BYTES;
  if (!p->host_pointers)
    return false;
  if (plan->whole != PP_N_PATHS)
    return small || p->n_slots <= LATENCY_PLANS_MAX_SLOTS;
  return small && p->n_slots <= IN_PLACE_LAYERS_MAX_SLOTS;
}

/* How frames of the plan's kernels cross: the fastest of whole, in place
 * and C chunks, by GAIN over a whole frame; *us what it takes. */
static int
choose_frames(const pp_planner *p, pp_cuda_plan *plan, double *us, char **msg)
{
  plan->frames = PP_FRAMES_WHOLE;
  double whole_us;
  int rc = time_frames(p, plan, &whole_us, msg);
  if (rc < 0)
    return rc;
  double best_us = whole_us;
  pp_cuda_plan best = *plan;
  /* With more than one slot a chunk count must also keep the period
   * (within GAIN), which the MLP on the GPU may set. */
  double whole_mlp_us = 0, whole_period = 0, copies_us = 0;
  if (p->n_slots > 1 && p->n_slots <= LATENCY_PLANS_MAX_SLOTS) {
    if ((rc = pp_planner_time_mlp(p, plan, &whole_mlp_us, msg)) < 0)
      return rc;
    copies_us = MAX(whole_us - whole_mlp_us, 0.0);
    whole_period = throughput_period(p, whole_us, whole_mlp_us, copies_us);
  }
  if (in_place_worth_trying(p, plan)) {
    pp_cuda_plan in_place = *plan;
    in_place.frames = PP_FRAMES_IN_PLACE;
    double t;
    if ((rc = time_frames(p, &in_place, &t, msg)) < 0)
      return rc;
    pp_log(PP_LOG_DEBUG, "plan", "frames in place %.1f µs against %.1f whole", t, whole_us);
    if (t < GAIN * best_us) {
      best_us = t;
      best = in_place;
    }
  }
  for (size_t i = 0; i < G_N_ELEMENTS(chunk_choices) && best.frames == PP_FRAMES_WHOLE &&
                     p->n_slots <= LATENCY_PLANS_MAX_SLOTS;
       i++) {
    if (!pp_frame_chunks_fit(p->layout, &p->slot->buf.x, chunk_choices[i]))
      continue;
    pp_cuda_plan chunked = *plan;
    chunked.frames = PP_FRAMES_CHUNKS;
    chunked.chunks = chunk_choices[i];
    /* A chunk count cuBLAS cannot plan for is one fewer candidate. */
    char *why = NULL;
    double t = 0;
    if (chunk_gemms(p, &chunked, &why) < 0 || time_frames(p, &chunked, &t, &why) < 0) {
      pp_log(PP_LOG_DEBUG, "plan", "%u chunks: %s", chunk_choices[i], why);
      g_free(why);
      continue;
    }
    pp_log(PP_LOG_DEBUG, "plan", "%u chunks %.1f µs against %.1f whole", chunk_choices[i], t,
           whole_us);
    if (t >= GAIN * whole_us || t >= best_us)
      continue;
    if (whole_period > 0) {
      const uint32_t rows = p->layout->n / chunked.chunks;
      double chunk_mlp_us;
      if ((rc = pp_planner_time_mlp_rows(p, &chunked, rows, &chunk_mlp_us, msg)) < 0)
        return rc;
      const double period = throughput_period(p, t, chunked.chunks * chunk_mlp_us, copies_us);
      pp_log(PP_LOG_DEBUG, "plan", "%u chunks: a period of %.1f µs against %.1f whole",
             chunk_choices[i], period, whole_period);
      if (GAIN * period > whole_period)
        continue;
    }
    best_us = t;
    best = chunked;
  }
  *plan = best;
  *us = best_us;
  return 0;
}

/* The frames a plan gives: checked against these shapes, with the chunk
 * algorithms it lacks tuned. */
static int
check_given_frames(const pp_planner *p, pp_cuda_plan *plan, char **msg)
{
  if (plan->frames == PP_FRAMES_IN_PLACE && !p->host_pointers) {
    *msg = g_strdup("plan: frames=in-place, but this GPU cannot use host pointers to registered "
                    "memory");
    return -EINVAL;
  }
  if (plan->frames != PP_FRAMES_CHUNKS)
    return 0;
  if (!pp_frame_chunks_fit(p->layout, &p->slot->buf.x, plan->chunks)) {
    GString *fits = g_string_new("whole");
    for (size_t i = 0; i < G_N_ELEMENTS(chunk_choices); i++)
      if (pp_frame_chunks_fit(p->layout, &p->slot->buf.x, chunk_choices[i]))
        g_string_append_printf(fits, ", chunks:%u", chunk_choices[i]);
    *msg = g_strdup_printf("plan: frames=chunks:%u does not fit these frames; give %s",
                           plan->chunks, fits->str);
    g_string_free(fits, TRUE);
    return -EINVAL;
  }
  return chunk_gemms(p, plan, msg);
}

int
pp_planner_frames(const pp_planner *p, pp_cuda_plan *plan, pp_cuda_path whole_alt, char **msg)
{
  if (plan->given & PP_PLAN_FRAMES)
    return check_given_frames(p, plan, msg);
  double us;
  int rc = choose_frames(p, plan, &us, msg);
  if (rc < 0 || whole_alt == PP_N_PATHS)
    return rc;
  /* The layers beat a whole-MLP kernel on the MLP alone, but the whole
   * kernel may still win the frame: it reads a frame in place while it
   * computes. */
  pp_cuda_plan alt = *plan;
  alt.whole = whole_alt;
  double alt_us;
  if ((rc = choose_frames(p, &alt, &alt_us, msg)) < 0)
    return rc;
  pp_log(PP_LOG_DEBUG, "plan", "%s %.1f µs a frame against the layers' %.1f",
         pp_cuda_path_name(whole_alt), alt_us, us);
  if (GAIN * alt_us <= us)
    *plan = alt;
  return 0;
}
