/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The benchmark's timings of a configured CUDA backend (cuda_timing.h):
 * each stage of a frame alone, and the MLP on each kernel path. */
#ifndef PP_CUDA_BENCH_TIMING_H
#define PP_CUDA_BENCH_TIMING_H

#include "cuda_timing.h"

int cuda_bench_time_stages(pp_backend *b, const void *input, float *output, unsigned reps,
                           pp_cuda_stage_times *out, char **msg);
int cuda_bench_time_paths(pp_backend *b, unsigned reps, pp_cuda_path_time *out, unsigned max,
                          unsigned *n, char **msg);

#endif
