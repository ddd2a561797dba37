/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Timing GPU work with events, and GPU times put on the host clock. */
#include "gpu_timer.h"

#include <glib.h>

#include "check.h"
#include "cuda_kernels.h"
#include "timing.h"

/* A timed region starts behind this much GPU busy-wait. */
#define LEAD_US 100

static int
time_runs(cudaStream_t stream, pp_gpu_work_fn work, void *data, unsigned reps, double *samples,
          cudaEvent_t start, cudaEvent_t stop, char **msg)
{
  for (unsigned i = 0; i < reps; i++) {
    CUDA_CHECK(pp_cuda_spin(stream, LEAD_US));
    CUDA_CHECK(cudaEventRecord(start, stream));
    const int rc = work(data, stream, msg);
    if (rc < 0)
      return rc;
    CUDA_CHECK(cudaEventRecord(stop, stream));
    CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0;
    CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    samples[i] = ms * 1000.0;
  }
  return 0;
}

int
pp_gpu_time_work(cudaStream_t stream, pp_gpu_work_fn work, void *data, unsigned warmup,
                 unsigned reps, double *us, char **msg)
{
  cudaEvent_t start = NULL, stop = NULL;
  g_autofree double *samples = g_new(double, reps ? reps : 1);
  int rc = 0;
  for (unsigned i = 0; i < warmup && rc == 0; i++)
    rc = work(data, stream, msg);
  cudaError_t err = cudaEventCreate(&start);
  if (err == cudaSuccess)
    err = cudaEventCreate(&stop);
  if (rc == 0 && err != cudaSuccess)
    rc = pp_cuda_fail(msg, "cudaEventCreate", err, __FILE__, __LINE__);
  if (rc == 0)
    rc = time_runs(stream, work, data, reps, samples, start, stop, msg);
  if (start)
    cudaEventDestroy(start);
  if (stop)
    cudaEventDestroy(stop);
  if (rc == 0)
    *us = pp_median(samples, reps);
  return rc;
}

int
pp_gpu_time_roundtrip(cudaStream_t stream, cudaStream_t last, pp_gpu_work_fn work, void *data,
                      unsigned warmup, unsigned reps, double *us, char **msg)
{
  cudaEvent_t done = NULL;
  g_autofree double *samples = g_new(double, reps ? reps : 1);
  CUDA_CHECK(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
  int rc = 0;
  for (unsigned i = 0; i < warmup + reps && rc == 0; i++) {
    const int64_t t0 = pp_now_ns();
    rc = work(data, stream, msg);
    cudaError_t err = rc == 0 ? cudaEventRecord(done, last) : cudaSuccess;
    if (rc == 0 && err == cudaSuccess)
      while ((err = cudaEventQuery(done)) == cudaErrorNotReady)
        ;
    if (rc == 0 && err != cudaSuccess)
      rc = pp_cuda_fail(msg, "timing a frame", err, __FILE__, __LINE__);
    if (rc == 0 && i >= warmup)
      samples[i - warmup] = (pp_now_ns() - t0) / 1000.0;
  }
  cudaEventDestroy(done);
  if (rc == 0)
    *us = pp_median(samples, reps);
  return rc;
}

/* An event recorded on an idle stream has run by the time
 * cudaEventSynchronize returns, so its time is at most the host's then:
 * device spans can come out late by the wake-up, never before the host
 * work that caused them. Of several rounds the tightest is kept; its width
 * bounds the error. cudaEventElapsedTime's float milliseconds keep µs
 * precision for ~10 s after the anchor, so it is set at every configure. */
int
pp_gpu_anchor_set(pp_gpu_anchor *a, cudaStream_t stream, char **msg)
{
  if (!a->event)
    CUDA_CHECK(cudaEventCreate(&a->event));
  if (!a->spare)
    CUDA_CHECK(cudaEventCreate(&a->spare));
  a->window_ns = INT64_MAX;
  for (int i = 0; i < 8; i++) { /* the first warms up */
    const int64_t before = pp_now_ns();
    CUDA_CHECK(cudaEventRecord(a->spare, stream));
    CUDA_CHECK(cudaEventSynchronize(a->spare));
    const int64_t after = pp_now_ns();
    if (i > 0 && after - before < a->window_ns) {
      const cudaEvent_t tightest = a->spare;
      a->spare = a->event;
      a->event = tightest;
      a->ns = after;
      a->window_ns = after - before;
    }
  }
  return 0;
}

void
pp_gpu_anchor_free(pp_gpu_anchor *a)
{
  if (a->event)
    cudaEventDestroy(a->event);
  if (a->spare)
    cudaEventDestroy(a->spare);
  *a = (pp_gpu_anchor){ 0 };
}

int64_t
pp_gpu_anchor_time(const pp_gpu_anchor *a, cudaEvent_t event)
{
  float since = 0;
  if (!a->ns || cudaEventElapsedTime(&since, a->event, event) != cudaSuccess)
    return 0;
  return a->ns + (int64_t) (since * 1e6);
}
