/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The CUDA backend's configure: the weights on the device, the plan (from
 * the cache's line, a forced line, or the planner), the slots that run it
 * and their graphs. */
#include "backend_configure.h"

#include <errno.h>
#include <glib.h>

#include "check.h"
#include "error.h"
#include "frame.h"
#include "log.h"
#include "timing.h"

void
pp_cuda_backend_unconfigure(cuda_backend *b)
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
  b->startup.plan_ms = pp_ms_since(t0) - b->startup.library_ms;
  t0 = pp_now_ns();
  const bool tuning = b->plan_source != PP_PLAN_CACHED;
  rc = alloc_slots(b, n_slots, tuning || pp_cuda_plan_uses_cublas(&b->plan), msg);
  b->startup.alloc_ms = pp_ms_since(t0);
  if (rc == 0 && tuning) {
    t0 = pp_now_ns();
    rc = tune(b, &given, req && req->quick, msg);
    /* The plan chose from candidates that made their GEMMs: ready what it
     * runs (all made already), free the rest. */
    if (rc == 0)
      rc = pp_mlp_exec_prepare(b->exec, &b->plan, msg);
    b->startup.plan_ms += pp_ms_since(t0);
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

int
pp_cuda_backend_configure(pp_backend *base, const pp_model *model, const pp_frame_layout *layout,
                          unsigned n_slots, const pp_plan_request *req, char **msg)
{
  cuda_backend *b = (cuda_backend *) base;
  const int64_t start = pp_now_ns();
  CUDA_CHECK(pp_cuda_device_bind(&b->device));
  base->ops->sync(base);
  pp_cuda_backend_unconfigure(b);
  const double open_ms = b->startup.open_ms;
  b->startup = (pp_startup_times){ .open_ms = open_ms };
  int64_t t0 = pp_now_ns();
  int rc = 0;
  if (b->weights.model_id != model->id)
    rc = pp_gpu_weights_upload(&b->weights, model, pp_precision_dtype(b->precision),
                               b->device.setup, msg);
  b->startup.weights_ms = pp_ms_since(t0);
  b->one = *layout;
  b->layout = *layout;
  b->batch = req && req->batch > 1 ? req->batch : 1;
  if (rc == 0 && b->batch > 1 && !pp_frame_layout_stack(layout, b->batch, &b->layout))
    rc = pp_error(msg, EINVAL,
                  "frames of this layout cannot run in batches (one plane, whole rows)");
  t0 = pp_now_ns();
  if (rc == 0)
    rc = pp_mlp_exec_new(&b->weights, &b->layout, b->precision, b->device.setup, &b->exec, msg);
  pp_log(PP_LOG_DEBUG, "cuda", "the executor made: %.1f ms", pp_ms_since(t0));
  t0 = pp_now_ns();
  if (rc == 0)
    rc = configure_plan(b, n_slots, req, msg);
  pp_log(PP_LOG_DEBUG, "cuda", "the plan configured: %.1f ms", pp_ms_since(t0));
  if (rc < 0) {
    pp_cuda_backend_unconfigure(b);
    return rc;
  }
  t0 = pp_now_ns();
  capture_graphs(b);
  b->startup.graphs_ms = pp_ms_since(t0);
  b->path = (pp_frame_path){ .plan = &b->plan,
                             .exec = b->exec,
                             .layout = &b->layout,
                             .o = b->weights.o,
                             .one = &b->one,
                             .batch = b->batch,
                             .partial_rows = b->partial_rows };
  pp_frame_path_set_chunks(&b->path, &b->slots[0].buf.x);
  if (b->time_every_frame && (rc = pp_gpu_anchor_set(&b->anchor, b->device.setup, msg)) < 0) {
    pp_cuda_backend_unconfigure(b);
    return rc;
  }
  b->plan_line = pp_cuda_plan_to_line(&b->plan);
  b->detail = g_strdup_printf("%s loads=%s", b->plan_line, reader_name(&b->slots[0].buf.x));
  b->startup.configure_ms = pp_ms_since(start);
  pp_log(PP_LOG_INFO, "cuda", "plan (%s): %s", pp_plan_source_name(b->plan_source), b->plan_line);
  if (b->plan_refused)
    pp_log(PP_LOG_INFO, "cuda", "the cached plan was not used: %s", b->plan_refused);
  return 0;
}
