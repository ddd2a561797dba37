/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What the CUDA backend measures for the benchmark beyond pp_backend_ops:
 * each stage of a frame alone, and the MLP on each kernel path. */
#ifndef PP_CUDA_TIMING_H
#define PP_CUDA_TIMING_H

#include "backend.h"
#include "cuda_plan.h"

/* Median time, in microseconds, of each stage alone on a configured CUDA
 * backend, on its first slot's stream with CUDA events: uploading `input`
 * (host memory, as a frame would come), the MLP, downloading the result to
 * `output`. `reps` repetitions after a warm-up. */
typedef struct {
  double h2d_us, mlp_us, d2h_us;
} pp_cuda_stage_times;

int pp_cuda_time_stages(pp_backend *b, const void *input, float *output, unsigned reps,
                        pp_cuda_stage_times *out, char **msg);

/* Median time of the MLP alone with every layer on each path that suits
 * the configured shapes (negative for the others), cuBLAS's algorithms
 * tuned. The backend runs its own plan again after. */
int pp_cuda_time_paths(pp_backend *b, unsigned reps, double us[PP_N_PATHS], char **msg);

#endif
