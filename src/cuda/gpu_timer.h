/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Timing work on the GPU, the one way the planner and the benchmark do it,
 * and putting GPU events on the host's clock for traces. */
#ifndef PP_CUDA_GPU_TIMER_H
#define PP_CUDA_GPU_TIMER_H

#include <cuda_runtime_api.h>
#include <stdint.h>

/* Enqueues the work to time on `stream` (where it starts). */
typedef int (*pp_gpu_work_fn)(void *data, cudaStream_t stream, char **msg);

/* The work's time on the device: median µs of `reps` runs between two
 * events, each run behind a GPU busy-wait so the CPU has launched all of it
 * before the GPU gets there, after `warmup` runs not timed. */
int pp_gpu_time_work(cudaStream_t stream, pp_gpu_work_fn work, void *data, unsigned warmup,
                     unsigned reps, double *us, char **msg);

/* The work's time as the host sees it, enqueue to done (polling an event
 * recorded on `last`, where the work ends): median µs of `reps` runs. */
int pp_gpu_time_roundtrip(cudaStream_t stream, cudaStream_t last, pp_gpu_work_fn work, void *data,
                          unsigned warmup, unsigned reps, double *us, char **msg);

/* An event recorded at a known host time, so events after it can be put on
 * the host's clock (pp_now_ns). */
typedef struct {
  cudaEvent_t event, spare;
  int64_t ns;        /* the host's time of `event` */
  int64_t window_ns; /* how far off that can be */
} pp_gpu_anchor;

/* Sets the anchor on `stream`, which must be idle. */
int pp_gpu_anchor_set(pp_gpu_anchor *a, cudaStream_t stream, char **msg);
void pp_gpu_anchor_free(pp_gpu_anchor *a);
/* The host time of `event` (recorded and complete), 0 if unknown. */
int64_t pp_gpu_anchor_time(const pp_gpu_anchor *a, cudaEvent_t event);

#endif
