// SPDX-License-Identifier: LGPL-2.1-or-later
/* pingpong-bench's parts: the workloads, and each stage of one timed alone
 * on the GPU (bench-gpu.c). */
#ifndef PP_BENCH_H
#define PP_BENCH_H

#include <gst/gst.h>

#include "cuda_timing.h"

typedef struct {
  const char *name, *caps, *mapping;
  guint patch, hidden, outputs;
  const char *bound;
  const char *color;
  const char *layers; /* the layers property, for more than the seed's two layers */
} workload;

typedef struct {
  pp_cuda_stage_times stages;
  double ref_mlp_us;
  double paths_us[PP_N_PATHS];
} gpu_times;

/* The same shapes and weights as the element, on a backend of our own:
 * each stage alone as the element's plan `plan` (its line) runs them,
 * every path's MLP, and plain cuBLAS, on `frame`. */
gboolean bench_time_gpu(const workload *w, const char *precision, const char *completion,
                        const char *plan, GstBuffer *frame, gpu_times *t);

#endif
