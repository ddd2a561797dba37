/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What the CUDA backend measures for the benchmark beyond pp_backend_ops:
 * each stage of a frame alone, and the MLP on each kernel path. Through
 * the module (cuda_module.h); -ENOTSUP without it. */
#ifndef PP_CUDA_TIMING_H
#define PP_CUDA_TIMING_H

#include "backend.h"

/* Median time, in microseconds, of each stage alone on a configured CUDA
 * backend, on its first slot's stream with CUDA events: uploading `input`
 * (host memory, as a frame would come), the MLP, downloading the result to
 * `output`. `reps` repetitions after a warm-up. */
typedef struct {
  double h2d_us, mlp_us, d2h_us;
} pp_cuda_stage_times;

int pp_cuda_time_stages(pp_backend *b, const void *input, float *output, unsigned reps,
                        pp_cuda_stage_times *out, char **msg);

/* The MLP alone with every layer on one kernel path, named as the plan
 * line names it (the name lives as long as the module). */
typedef struct {
  const char *path;
  double us;
} pp_cuda_path_time;

#define PP_CUDA_MAX_PATH_TIMES 16

/* Each kernel path that suits the configured shapes, at most `max` (*n
 * of them), cuBLAS's algorithms tuned. The backend runs its own plan
 * again after. */
int pp_cuda_time_paths(pp_backend *b, unsigned reps, pp_cuda_path_time *out, unsigned max,
                       unsigned *n, char **msg);

#endif
