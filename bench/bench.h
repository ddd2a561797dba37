// SPDX-License-Identifier: LGPL-2.1-or-later
/* pingpong-bench's parts: the workloads, and each stage of one timed alone
 * on one device (bench-stages.c, with the GPU's in bench-gpu.c). */
#ifndef PP_BENCH_H
#define PP_BENCH_H

#include <gst/gst.h>

#include "cuda_timing.h"
#include "frame.h"
#include "model.h"

typedef struct {
  const char *name, *caps, *mapping;
  guint patch, hidden, outputs;
  const char *bound;
  const char *color;
  const char *layers; /* the layers property, for more than the seed's two layers */
} workload;

/* Each stage alone, in µs; negative where the backend has no such stage
 * (the CPU's copies) or it was not timed. */
typedef struct {
  pp_cuda_stage_times stages;
  double ref_mlp_us;
  pp_cuda_path_time paths[PP_CUDA_MAX_PATH_TIMES]; /* each path's MLP alone */
  unsigned n_paths;
  int device; /* the one device timed */
} stage_times;

/* What the element ran, as it said in its stats: the backend, its device
 * list and plan line (several devices: their parts joined), precision and
 * completion. */
typedef struct {
  const char *backend, *devices, *plan, *precision, *completion;
} element_setup;

/* The same shapes and weights as the element, on a backend of our own on
 * the first device of its list, with that device's part of its plan: each
 * stage alone on `frame`, and on the GPU every path's MLP and plain
 * cuBLAS. FALSE with a line on stderr when it cannot. */
gboolean bench_time_stages(const workload *w, const element_setup *e, GstBuffer *frame,
                           stage_times *t);

/* The GPU's part of bench_time_stages: `plan` is one device's line. */
gboolean bench_time_gpu(const element_setup *e, int device, const char *plan,
                        const pp_frame_layout *layout, pp_model *model, GstBuffer *frame,
                        stage_times *t, char **msg);

/* The physical bound of a workload: each stage at the device's rates (its
 * bytes over the measured copy bandwidth, its FLOPs over the arithmetic
 * peak), and the period none of them lets a pipeline beat. `copies_us`:
 * both directions' bytes at the rate the two copy engines keep together,
 * which is below the sum of their rates alone. */
typedef struct {
  double h2d_us, mlp_us, d2h_us, copies_us, period_us;
  const char *by; /* "H2D", "MLP", "D2H" or "copies" */
} bench_bound_times;

/* Pinned copy rates, bytes per µs: each direction alone, and both
 * directions' bytes together while an upload and a download run at once. */
typedef struct {
  double h2d, d2h, both;
} bench_copy_rates;

/* `device`'s pinned copy rates (64 MiB copies, medians); FALSE with a line
 * on stderr when it cannot time them. */
gboolean bench_copy_bandwidth(int device, bench_copy_rates *rates);

/* `device`'s dense arithmetic peak for `precision` (fp32, tf32, bf16,
 * fp16), FLOPs per µs, from its SM count, clock and architecture; -1 when
 * its properties cannot be read. */
double bench_peak_flops_per_us(int device, const char *precision);

/* The bound of `model` on frames laid out as `layout`: the bytes its planes
 * hold in, N×O float32 out, 2·N·in·out FLOPs a layer. */
void bench_bound(const pp_frame_layout *layout, const pp_model *model, const bench_copy_rates *copy,
                 double flops_per_us, bench_bound_times *b);

/* The element's frame layout and model for `w`, as cudamlp makes them. */
gboolean bench_workload_model(const workload *w, pp_frame_layout *layout, pp_model **model,
                              char **msg);

#endif
