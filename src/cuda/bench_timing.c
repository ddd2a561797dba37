/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The benchmark's per-stage GPU timings of a configured backend. */
#include "bench_timing.h"

#include <errno.h>
#include <glib.h>

#include "check.h"
#include "cuda_backend.h"
#include "gpu_timer.h"
#include "planner_steps.h"

typedef struct {
  const pp_cuda_parts *parts;
  int stage; /* 0 upload, 1 MLP, 2 download */
  const void *input;
  float *output;
} stage_run;

static int
run_stage(void *data, cudaStream_t stream, char **msg)
{
  const stage_run *r = data;
  pp_cuda_slot *s = r->parts->slot;
  if (r->stage == 0) {
    CUDA_CHECK(cudaMemcpyAsync(s->d_in, r->input, s->frame_bytes, cudaMemcpyHostToDevice, stream));
    return 0;
  }
  if (r->stage == 2) {
    CUDA_CHECK(
        cudaMemcpyAsync(r->output, s->buf.d_out, s->out_bytes, cudaMemcpyDeviceToHost, stream));
    return 0;
  }
  const pp_mlp_rows whole = { 0, r->parts->layout->n, NULL, NULL, 0 };
  return pp_mlp_exec_run(r->parts->exec, r->parts->plan, &s->buf, &whole, stream, msg);
}

/* Configured, bound, nothing else running. */
static int
ready(pp_backend *b, unsigned reps, pp_cuda_parts *parts, char **msg)
{
  if (!cuda_backend_parts(b, parts) || reps == 0) {
    *msg = g_strdup("the backend is not configured");
    return -EINVAL;
  }
  CUDA_CHECK(pp_cuda_device_bind(parts->device));
  b->ops->sync(b);
  return 0;
}

int
cuda_bench_time_stages(pp_backend *b, const void *input, float *output, unsigned reps,
                       pp_cuda_stage_times *out, char **msg)
{
  pp_cuda_parts parts;
  int rc = ready(b, reps, &parts, msg);
  double *stages[] = { &out->h2d_us, &out->mlp_us, &out->d2h_us };
  for (int i = 0; i < 3 && rc == 0; i++) {
    stage_run r = { &parts, i, input, output };
    rc = pp_gpu_time_work(parts.slot->stream, run_stage, &r, 2, reps, stages[i], msg);
  }
  return rc;
}

/* Every layer on `path` (a whole-MLP path: that kernel), rowdot where it
 * fits, as the planner takes it; cuBLAS's algorithms tuned. The plan may
 * name no layers (a whole-MLP plan read from its line): the model says how
 * many. */
static int
time_path(const pp_planner *p, const pp_cuda_plan *plan, pp_cuda_path path, double *us, char **msg)
{
  pp_cuda_plan forced = *plan;
  forced.frames = PP_FRAMES_WHOLE;
  const pp_cuda_path_info *info = pp_cuda_path_info_of(path);
  forced.whole = info->whole ? path : PP_N_PATHS;
  if (info->tuning == PP_TUNE_SMALL_ROWS)
    return pp_planner_tune_small(p, &forced, us, msg);
  forced.n_layers = p->weights->n_layers;
  for (unsigned i = 0; forced.whole == PP_N_PATHS && i < forced.n_layers; i++) {
    pp_layer_plan *l = &forced.layers[i];
    /* split reads a first layer of bytes: the layers after it on cublas. */
    const pp_cuda_path own = path == PP_PATH_SPLIT && i > 0 ? PP_PATH_CUBLAS : path;
    const bool rowdot = pp_mlp_exec_fits(p->exec, PP_PATH_ROWDOT, i);
    *l = (pp_layer_plan){ .path = rowdot ? PP_PATH_ROWDOT : own, .pieces = p->pieces };
    if (rowdot)
      continue;
    double t;
    const int rc = pp_cuda_path_tunes_gemm(own)
                       ? pp_planner_tune_gemm(p, &forced, i, p->layout->n, &t, msg)
                       : 0;
    if (rc < 0)
      return rc;
  }
  return pp_planner_time_mlp(p, &forced, us, msg);
}

/* Whole-MLP kernels that fit, and the paths the planner times for a layer
 * (rowdot, taken wherever it fits, is in every layer-by-layer line). */
static bool
path_fits(const pp_cuda_parts *parts, pp_cuda_path path)
{
  const pp_cuda_path_info *info = pp_cuda_path_info_of(path);
  if (!info->whole && !info->timed)
    return false;
  if (info->whole)
    return pp_mlp_exec_fits(parts->exec, path, 0);
  return pp_mlp_exec_fits(parts->exec, path, 0) || path == PP_PATH_CUBLAS;
}

int
cuda_bench_time_paths(pp_backend *b, unsigned reps, pp_cuda_path_time *out, unsigned max,
                      unsigned *n, char **msg)
{
  *n = 0;
  pp_cuda_parts parts;
  int rc = ready(b, reps, &parts, msg);
  if (rc < 0)
    return rc;
  unsigned pieces = 2;
  for (unsigned i = 0; i < parts.plan->n_layers; i++)
    if (parts.plan->layers[i].path == PP_PATH_SPLIT)
      pieces = parts.plan->layers[i].pieces;
  const pp_planner p = { .exec = parts.exec,
                         .weights = parts.weights,
                         .layout = parts.layout,
                         .slot = parts.slot,
                         .n_slots = parts.n_slots,
                         .pieces = pieces,
                         .completion = parts.plan->completion };
  (void) reps;
  /* Slot 0 with the scratch and workspace any path needs while they are
   * timed. */
  rc = pp_cuda_slot_fit_scratch(parts.slot, pp_mlp_exec_scratch_bytes(parts.exec, NULL), msg);
  if (rc == 0)
    rc = pp_cuda_slot_fit_workspace(parts.slot, true, msg);
  for (int path = 0; path < PP_N_PATHS && rc == 0 && *n < max; path++) {
    double us;
    char *why = NULL;
    if (!path_fits(&parts, path))
      continue;
    if (time_path(&p, parts.plan, path, &us, &why) < 0) {
      g_free(why);
      continue;
    }
    out[(*n)++] = (pp_cuda_path_time){ pp_cuda_path_name(path), us };
  }
  /* The other paths' GEMMs freed; slot 0's graphs for the backend's own
   * plan again. */
  pp_mlp_exec_keep_only(parts.exec, parts.plan);
  if (rc == 0)
    rc = pp_cuda_slot_fit_scratch(parts.slot, pp_mlp_exec_scratch_bytes(parts.exec, parts.plan),
                                  msg);
  if (rc == 0)
    rc = pp_cuda_slot_fit_workspace(parts.slot, pp_cuda_plan_uses_cublas(parts.plan), msg);
  char *why = NULL;
  if (rc == 0 &&
      pp_cuda_slot_capture(parts.slot, parts.exec, parts.plan, parts.layout->n, &why) < 0)
    g_free(why);
  return rc;
}
