/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The CUDA backend (pp_backend_ops): configure makes the plan (from the
 * cache's line, a forced line, or the planner) and the slots that run it;
 * submit sends a frame on its slot's stream as the plan says (frame_path.c)
 * and hands it to completion.c; finish copies a staged result out and
 * reads stage times. Per frame: no allocation, no wait, nothing on the
 * default stream. */
#include "cuda_backend.h"

#include <cublas_api.h>

#include <errno.h>
#include <glib.h>
#include <string.h>

#include "cuda_backend.h"
#include "check.h"
#include "completion.h"
#include "error.h"
#include "frame.h"
#include "frame_path.h"
#include "gpu_timer.h"
#include "log.h"
#include "planner.h"
#include "timing.h"

/* Stage times are read back for one frame in this many: reading them costs
 * the consumer thread a few microseconds. */
#define TIMING_PERIOD 8

struct cuda_backend {
  pp_backend base;
  pp_backend_ops ops;
  pp_cuda_device device;
  pp_precision precision;
  pp_completion completion;
  bool time_every_frame;
  pp_cuda_completion *waiter;
  pp_gpu_weights weights;
  char key[384];

  /* From configure. */
  pp_frame_layout one;    /* a frame's layout */
  pp_frame_layout layout; /* a slot's: `batch` frames back to back */
  unsigned batch;
  bool partial_rows; /* a batch of fewer frames runs only their samples */
  pp_mlp_exec *exec;
  pp_cuda_plan plan;
  pp_frame_path path;
  unsigned n_slots;
  pp_cuda_slot slots[PP_MAX_SLOTS];
  pp_gpu_anchor anchor; /* set when every frame is timed (traces) */
  char *plan_line, *plan_refused, *detail;
  pp_plan_source plan_source;
  pp_startup_times startup;
};

static double
ms_since(int64_t t0)
{
  return (pp_now_ns() - t0) / 1e6;
}

/* ---- configure ----------------------------------------------------------- */

static void
free_configuration(cuda_backend *b)
{
  for (unsigned i = 0; i < b->n_slots; i++)
    pp_cuda_slot_free(&b->slots[i]);
  b->n_slots = 0;
  g_clear_pointer(&b->exec, pp_mlp_exec_free);
  g_clear_pointer(&b->plan_line, g_free);
  g_clear_pointer(&b->plan_refused, g_free);
  g_clear_pointer(&b->detail, g_free);
}

/* Random bytes (or floats) in slot 0's frame, so timing never runs on
 * zeros. */
static int
fill_random_frame(cuda_backend *b, char **msg)
{
  pp_cuda_slot *s = &b->slots[0];
  GRand *rng = g_rand_new_with_seed(2026);
  if (b->layout.kind == PP_LAYOUT_TENSOR) {
    float *f = s->staging_in;
    for (size_t i = 0; i < b->layout.frame_bytes / sizeof(float); i++)
      f[i] = (float) g_rand_double_range(rng, -1, 1);
  } else {
    uint32_t *words = s->staging_in;
    for (size_t i = 0; i < b->layout.frame_bytes / sizeof(uint32_t); i++)
      words[i] = g_rand_int(rng);
  }
  g_rand_free(rng);
  CUDA_CHECK(cudaMemcpyAsync(s->d_in, s->staging_in, b->layout.frame_bytes, cudaMemcpyHostToDevice,
                             s->stream));
  CUDA_CHECK(cudaStreamSynchronize(s->stream));
  return 0;
}

/* A cached plan, if it still fits: parsed, whole, and every GEMM it names
 * accepted by this cuBLAS. *why says why not. */
static bool
use_cached_plan(cuda_backend *b, const char *line, char **why)
{
  pp_cuda_plan plan;
  if (pp_cuda_plan_parse(line, &plan, why) < 0)
    return false;
  if (plan.given != PP_PLAN_ALL) {
    *why = g_strdup("the cached plan is incomplete");
    return false;
  }
  if (plan.completion != b->completion) {
    *why = g_strdup("the cached plan was made for another completion");
    return false;
  }
  double load_ms = 0;
  if (pp_cuda_plan_uses_cublas(&plan) && pp_mlp_exec_use_cublas(b->exec, &load_ms, why) < 0)
    return false;
  b->startup.library_ms += load_ms;
  if (pp_mlp_exec_prepare(b->exec, &plan, why) < 0)
    return false;
  b->plan = plan;
  return true;
}

static int
alloc_slots(cuda_backend *b, unsigned n_slots, bool workspace, char **msg)
{
  const size_t out_bytes = (size_t) b->layout.n * b->weights.o * sizeof(float);
  for (unsigned i = 0; i < n_slots; i++) {
    b->n_slots = i + 1;
    const int rc = pp_cuda_slot_alloc(&b->slots[i], i, b->exec, &b->weights, &b->layout, out_bytes,
                                      workspace, msg);
    if (rc < 0)
      return rc;
  }
  return 0;
}

static int
tune(cuda_backend *b, const pp_cuda_plan *given, bool quick, char **msg)
{
  int rc = fill_random_frame(b, msg);
  if (rc < 0)
    return rc;
  const pp_planner planner = {
    .exec = b->exec,
    .weights = &b->weights,
    .layout = &b->layout,
    .slot = &b->slots[0],
    .n_slots = b->n_slots,
    .host_pointers = b->device.host_pointers,
    .quick = quick,
    .pieces = b->precision == PP_PRECISION_TF32 ? 1 : 2,
    .completion = b->completion,
  };
  return pp_planner_choose(&planner, given, &b->plan, msg);
}

static const char *
reader_name(const pp_cuda_a *x)
{
  switch (x->kind) {
    case PP_A_U8_VEC4:
      return "u8x4";
    case PP_A_U8_GATHER:
      return "u8";
    case PP_A_YUV:
      return "yuv";
    default:
      return "f32";
  }
}

/* Every slot's graphs; a capture the driver refuses leaves that slot on
 * direct launches. */
static void
capture_graphs(cuda_backend *b)
{
  for (unsigned i = 0; i < b->n_slots; i++) {
    char *why = NULL;
    if (pp_cuda_slot_capture(&b->slots[i], b->exec, &b->plan, b->layout.n, &why) < 0) {
      pp_log(PP_LOG_WARNING, "cuda", "slot %u runs without a CUDA graph: %s", i, why);
      g_free(why);
    }
  }
}

static int
configure_plan(cuda_backend *b, unsigned n_slots, const pp_plan_request *req, char **msg)
{
  pp_cuda_plan given = { .whole = PP_N_PATHS };
  int rc = req && req->forced ? pp_cuda_plan_parse(req->forced, &given, msg) : 0;
  if (rc < 0)
    return rc;
  if (req && req->no_graphs && !(given.given & PP_PLAN_GRAPHS)) {
    given.graphs = false;
    given.given |= PP_PLAN_GRAPHS;
  }
  /* A batch's frames cross whole, one after the other. */
  if (b->batch > 1 && (given.given & PP_PLAN_FRAMES) && given.frames != PP_FRAMES_WHOLE) {
    *msg = g_strdup("plan: batches of frames cross whole (frames=whole)");
    return -EINVAL;
  }
  if (b->batch > 1) {
    given.frames = PP_FRAMES_WHOLE;
    given.given |= PP_PLAN_FRAMES;
  }
  b->plan_source = req && req->forced ? PP_PLAN_FORCED : PP_PLAN_TUNED;
  int64_t t0 = pp_now_ns();
  if (req && req->cached && !req->forced) {
    char *why = NULL;
    if (use_cached_plan(b, req->cached, &why))
      b->plan_source = PP_PLAN_CACHED;
    else
      b->plan_refused = why;
  }
  b->startup.plan_ms = ms_since(t0) - b->startup.library_ms;
  t0 = pp_now_ns();
  const bool tuning = b->plan_source != PP_PLAN_CACHED;
  rc = alloc_slots(b, n_slots, tuning || pp_cuda_plan_uses_cublas(&b->plan), msg);
  b->startup.alloc_ms = ms_since(t0);
  if (rc == 0 && tuning) {
    t0 = pp_now_ns();
    rc = tune(b, &given, req && req->quick, msg);
    /* The plan chose from candidates that made their GEMMs: ready what it
     * runs (all made already), free the rest. */
    if (rc == 0)
      rc = pp_mlp_exec_prepare(b->exec, &b->plan, msg);
    b->startup.plan_ms += ms_since(t0);
  }
  /* A batch of fewer frames runs only their samples where the plan's
   * GEMMs take those rows too; else all of the slot's. */
  b->partial_rows = false;
  if (rc == 0 && b->batch > 1) {
    char *why = NULL;
    b->partial_rows = pp_mlp_exec_prepare_batches(b->exec, &b->plan, b->batch, &why) == 0;
    if (!b->partial_rows)
      pp_log(PP_LOG_INFO, "cuda", "batches of fewer than %u frames run all of theirs: %s", b->batch,
             why);
    g_free(why);
  }
  if (rc == 0)
    pp_mlp_exec_keep_only(b->exec, &b->plan);
  /* The slots keep only the scratch and workspace the plan uses. */
  const size_t scratch = pp_mlp_exec_scratch_bytes(b->exec, &b->plan);
  const bool workspace = pp_cuda_plan_uses_cublas(&b->plan);
  for (unsigned i = 0; i < b->n_slots && rc == 0; i++) {
    rc = pp_cuda_slot_fit_scratch(&b->slots[i], scratch, msg);
    if (rc == 0)
      rc = pp_cuda_slot_fit_workspace(&b->slots[i], workspace, msg);
  }
  return rc;
}

static int
cuda_configure(pp_backend *base, const pp_model *model, const pp_frame_layout *layout,
               unsigned n_slots, const pp_plan_request *req, char **msg)
{
  cuda_backend *b = (cuda_backend *) base;
  const int64_t start = pp_now_ns();
  CUDA_CHECK(pp_cuda_device_bind(&b->device));
  base->ops->sync(base);
  free_configuration(b);
  const double open_ms = b->startup.open_ms;
  b->startup = (pp_startup_times){ .open_ms = open_ms };
  int64_t t0 = pp_now_ns();
  int rc = 0;
  if (b->weights.model_id != model->id)
    rc = pp_gpu_weights_upload(&b->weights, model, pp_precision_dtype(b->precision),
                               b->device.setup, msg);
  b->startup.weights_ms = ms_since(t0);
  b->one = *layout;
  b->layout = *layout;
  b->batch = req && req->batch > 1 ? req->batch : 1;
  if (rc == 0 && b->batch > 1 && !pp_frame_layout_stack(layout, b->batch, &b->layout))
    rc = pp_error(msg, EINVAL,
                  "frames of this layout cannot run in batches (one plane, whole rows)");
  if (rc == 0)
    rc = pp_mlp_exec_new(&b->weights, &b->layout, b->precision, b->device.setup, &b->exec, msg);
  if (rc == 0)
    rc = configure_plan(b, n_slots, req, msg);
  if (rc < 0) {
    free_configuration(b);
    return rc;
  }
  t0 = pp_now_ns();
  capture_graphs(b);
  b->startup.graphs_ms = ms_since(t0);
  b->path = (pp_frame_path){ .plan = &b->plan,
                             .exec = b->exec,
                             .layout = &b->layout,
                             .o = b->weights.o,
                             .one = &b->one,
                             .batch = b->batch,
                             .partial_rows = b->partial_rows };
  pp_frame_path_set_chunks(&b->path, &b->slots[0].buf.x);
  if (b->time_every_frame && (rc = pp_gpu_anchor_set(&b->anchor, b->device.setup, msg)) < 0) {
    free_configuration(b);
    return rc;
  }
  b->plan_line = pp_cuda_plan_to_line(&b->plan);
  b->detail = g_strdup_printf("%s loads=%s", b->plan_line, reader_name(&b->slots[0].buf.x));
  b->startup.configure_ms = ms_since(start);
  pp_log(PP_LOG_INFO, "cuda", "plan (%s): %s", pp_plan_source_name(b->plan_source), b->plan_line);
  if (b->plan_refused)
    pp_log(PP_LOG_INFO, "cuda", "the cached plan was not used: %s", b->plan_refused);
  return 0;
}

/* ---- one frame ----------------------------------------------------------- */

/* The done signal a frame read in place raises, or 0 for its event: one
 * kernel doing the whole frame says it is done itself, which saves a
 * driver call on each side of a paced frame. Not on frames whose stage
 * times are read: those come from the events around the kernel. */
static unsigned
next_signal(cuda_backend *b, pp_cuda_slot *s, const void *src)
{
  if (!src || !b->plan.signal || s->timed || b->plan.frames != PP_FRAMES_IN_PLACE ||
      !pp_mlp_exec_can_signal(&b->plan))
    return 0;
  if (++s->last_seq == 0) /* 0 means no signal */
    s->last_seq = 1;
  return s->last_seq;
}

/* The frame's event, and the frame to the completion's waiter. */
static int
hand_over(cuda_backend *b, unsigned index, cudaStream_t last, int64_t submitted, char **msg)
{
  pp_cuda_slot *s = &b->slots[index];
  if (!s->signal_seq) {
    const cudaError_t err = cudaEventRecord(s->ev_done, last);
    if (err != cudaSuccess) {
      pp_cuda_slot_sync(s);
      return pp_cuda_fail(msg, "cudaEventRecord", err, __FILE__, __LINE__);
    }
  }
  const pp_pending_frame f = { s->ev_done, s->done_flag, s->signal_seq, last, submitted };
  pp_cuda_completion_add(b->waiter, index, &f);
  return 0;
}

/* A batch of frames (a shared backend's), on a backend configured for
 * them. */
static int
submit_batch(cuda_backend *b, unsigned index, const pp_job *job, int64_t submitted, char **msg)
{
  pp_cuda_slot *s = &b->slots[index];
  if (!job->n_batch || b->batch <= 1) {
    *msg = g_strdup_printf("a job of %u frames on a backend configured for batches of %u",
                           MAX(job->n_batch, 1u), b->batch);
    return -EINVAL;
  }
  for (unsigned i = 0; i < job->n_batch && i < b->batch; i++) {
    const pp_job *f = &job->batch[i];
    if (f->input_on_device)
      __atomic_add_fetch(&b->base.device_inputs, 1, __ATOMIC_RELAXED);
    else if (!f->input_pinned)
      __atomic_add_fetch(&b->base.staged_inputs, 1, __ATOMIC_RELAXED);
  }
  s->timed = s->frames++ % (b->time_every_frame ? 1 : TIMING_PERIOD) == 0;
  s->signal_seq = 0;
  s->batch_frames = job->n_batch;
  const int rc = pp_frame_enqueue_batch(&b->path, s, job, msg);
  if (rc < 0) {
    /* Whatever part of it was queued finishes before we say no. */
    pp_cuda_slot_sync(s);
    return rc;
  }
  return hand_over(b, index, s->stream, submitted, msg);
}

static int
cuda_submit(pp_backend *base, unsigned index, const pp_job *job, char **msg)
{
  cuda_backend *b = (cuda_backend *) base;
  pp_cuda_slot *s = &b->slots[index];
  const int64_t submitted = pp_now_ns();
  CUDA_CHECK(pp_cuda_device_bind(&b->device));
  if (b->batch > 1 || job->n_batch)
    return submit_batch(b, index, job, submitted, msg);
  const void *src = job->input;
  if (job->input_on_device) {
    src = NULL;
    __atomic_add_fetch(&base->device_inputs, 1, __ATOMIC_RELAXED);
  } else if (!job->input_pinned) {
    memcpy(s->staging_in, job->input, b->layout.frame_bytes);
    src = s->staging_in;
    __atomic_add_fetch(&base->staged_inputs, 1, __ATOMIC_RELAXED);
  }
  float *dst = job->output_pinned ? job->output : s->staging_out;
  s->staged_out = !job->output_pinned;
  s->timed = s->frames++ % (b->time_every_frame ? 1 : TIMING_PERIOD) == 0;
  s->signal_seq = next_signal(b, s, src);
  const int rc = pp_frame_enqueue(&b->path, s, src, job, dst, msg);
  if (rc < 0) {
    /* Whatever part of the frame was queued finishes before we say no. */
    pp_cuda_slot_sync(s);
    return rc;
  }
  return hand_over(b, index, pp_frame_last_stream(&b->path, s, src), submitted, msg);
}

/* completion.c saw slot `slot`'s frame done (or failed). */
static void
report(void *data, unsigned slot, cudaError_t err)
{
  cuda_backend *b = data;
  const pp_cuda_slot *s = &b->slots[slot];
  char *msg = NULL;
  if (err != cudaSuccess)
    pp_cuda_fail(&msg, "a frame's work on the GPU", err, __FILE__, __LINE__);
  b->base.complete(b->base.complete_data, slot, err == cudaSuccess ? 0 : -EIO, msg,
                   err == cudaSuccess && !s->staged_out && !s->timed);
  g_clear_pointer(&msg, g_free);
}

static int
cuda_wait(pp_backend *base, unsigned slot, int64_t timeout_ns)
{
  return pp_cuda_completion_wait(((cuda_backend *) base)->waiter, slot, timeout_ns);
}

static int
cuda_finish(pp_backend *base, unsigned index, const pp_job *job, pp_stage_times *times)
{
  cuda_backend *b = (cuda_backend *) base;
  pp_cuda_slot *s = &b->slots[index];
  if (s->staged_out && job->n_batch) {
    const size_t results = (size_t) b->one.n * b->weights.o;
    for (unsigned i = 0; i < job->n_batch && i < s->batch_frames; i++)
      if (!job->batch[i].output_pinned)
        memcpy(job->batch[i].output, s->staging_out + i * results, results * sizeof(float));
  } else if (s->staged_out) {
    memcpy(job->output, s->staging_out, s->out_bytes);
  }
  if (!s->timed)
    return 0;
  /* A shared backend's lanes finish on their own threads. */
  if (pp_cuda_device_bind(&b->device) != cudaSuccess)
    return 0;
  float h2d = -1, mlp = -1, d2h = -1;
  if (cudaEventElapsedTime(&h2d, s->ev_start, s->ev_h2d) != cudaSuccess ||
      cudaEventElapsedTime(&mlp, s->ev_h2d, s->ev_mlp) != cudaSuccess ||
      cudaEventElapsedTime(&d2h, s->ev_mlp, s->ev_d2h) != cudaSuccess)
    return 0;
  *times =
      (pp_stage_times){ .h2d_us = h2d * 1000.0, .mlp_us = mlp * 1000.0, .d2h_us = d2h * 1000.0 };
  const int64_t start = pp_gpu_anchor_time(&b->anchor, s->ev_start);
  if (start) {
    times->h2d_start_ns = start;
    times->mlp_start_ns = start + (int64_t) (h2d * 1e6);
    times->d2h_start_ns = times->mlp_start_ns + (int64_t) (mlp * 1e6);
  }
  return 0;
}

static int
cuda_sync(pp_backend *base)
{
  cuda_backend *b = (cuda_backend *) base;
  pp_cuda_device_bind(&b->device);
  for (unsigned i = 0; i < b->n_slots; i++)
    pp_cuda_slot_sync(&b->slots[i]);
  pp_cuda_completion_drain(b->waiter);
  return 0;
}

static int
cuda_poll(pp_backend *base, unsigned index, char **msg)
{
  cuda_backend *b = (cuda_backend *) base;
  CUDA_CHECK(pp_cuda_device_bind(&b->device));
  const pp_cuda_slot *s = &b->slots[index];
  const cudaStream_t streams[] = { s->stream, s->compute, s->copy_out };
  for (size_t i = 0; i < G_N_ELEMENTS(streams); i++) {
    const cudaError_t err = cudaStreamQuery(streams[i]);
    if (err != cudaSuccess && err != cudaErrorNotReady)
      return pp_cuda_fail(msg, "a frame's work on the GPU", err, __FILE__, __LINE__);
  }
  return 0;
}

/* An empty kernel on the set-up stream, looked at once: a thread that slept
 * pays several times more for its next launch than one that launched
 * recently (docs/PERFORMANCE.md, "Pre-wake for paced streams"). */
static void
cuda_warm(pp_backend *base)
{
  cuda_backend *b = (cuda_backend *) base;
  if (pp_cuda_device_bind(&b->device) == cudaSuccess &&
      pp_cuda_spin(b->device.setup, 0) == cudaSuccess)
    cudaStreamQuery(b->device.setup);
}

static const char *
cuda_describe(pp_backend *base)
{
  return ((cuda_backend *) base)->detail;
}

static void
cuda_plan_info(pp_backend *base, pp_plan_info *info)
{
  cuda_backend *b = (cuda_backend *) base;
  *info = (pp_plan_info){ b->plan_line, b->plan_source, b->plan_refused, b->startup,
                          pp_cuda_plan_uses_cublas(&b->plan) };
}

static const char *
cuda_plan_key(pp_backend *base)
{
  return ((cuda_backend *) base)->key;
}

static void
cuda_destroy(pp_backend *base)
{
  cuda_backend *b = (cuda_backend *) base;
  pp_cuda_device_bind(&b->device);
  cuda_sync(base);
  pp_cuda_completion_free(b->waiter);
  free_configuration(b);
  pp_gpu_anchor_free(&b->anchor);
  pp_gpu_weights_free(&b->weights);
  pp_cuda_device_close(&b->device);
  g_free(b);
}

static const pp_backend_ops cuda_ops = {
  .abi = PP_BACKEND_ABI,
  .name = "cuda",
  .configure = cuda_configure,
  .submit = cuda_submit,
  .finish = cuda_finish,
  .sync = cuda_sync,
  .destroy = cuda_destroy,
  .poll = cuda_poll,
  .describe = cuda_describe,
  .warm = cuda_warm,
  .plan_info = cuda_plan_info,
  .plan_key = cuda_plan_key,
};

int
cuda_backend_new(const pp_backend_options *opts, pp_backend **out, char **msg)
{
  if (opts->completion != PP_COMPLETION_CONSUMER &&
      opts->completion != PP_COMPLETION_EVENT_THREAD) {
    *msg = g_strdup("the CUDA backend needs completion resolved to consumer or event-thread");
    return -EINVAL;
  }
  cuda_backend *b = g_new0(cuda_backend, 1);
  b->ops = cuda_ops;
  if (opts->completion == PP_COMPLETION_CONSUMER)
    b->ops.wait = cuda_wait;
  b->base.ops = &b->ops;
  b->precision = opts->precision;
  b->completion = opts->completion;
  b->time_every_frame = opts->time_every_frame;
  const int64_t t0 = pp_now_ns();
  const int rc = pp_cuda_device_open(&b->device, opts->device_id, opts->cuda_context, msg);
  if (rc < 0) {
    pp_cuda_device_close(&b->device);
    g_free(b);
    return rc;
  }
  b->startup.open_ms = ms_since(t0);
  /* A plan made before the planner had a kernel never weighed it: the
   * kernels' version in the key makes such plans be made again. */
  g_snprintf(b->key, sizeof b->key, "cuda %s cublas=%d abi=%d kernels=%d", b->device.identity,
             CUBLAS_VERSION, PP_BACKEND_ABI, PP_CUDA_KERNELS_VERSION);
  b->waiter = pp_cuda_completion_new(b->completion, &b->device, report, b);
  *out = &b->base;
  return 0;
}

/* ---- for the benchmark's timings (bench_timing.c) -------------------------- */

bool
cuda_backend_parts(pp_backend *base, pp_cuda_parts *parts)
{
  cuda_backend *b = (cuda_backend *) base;
  if (!b->n_slots)
    return false;
  *parts = (pp_cuda_parts){ &b->device, &b->weights,  b->exec,   &b->plan,
                            &b->layout, &b->slots[0], b->n_slots };
  return true;
}
