/* Time on the device: the anchor that puts CUDA events on the host's clock
 * (for traces), and the stage and path timings the benchmark reads. */
#include <glib.h>

#include "backend_cuda_priv.h"
#include "stats.h"

/* Puts event times on the host's clock. An event recorded on an idle stream
 * has run by the time cudaEventSynchronize returns, so its time is at most
 * the host's time then: taking that time, device spans can only come out
 * late, by the synchronize's wake-up, never before the host work that
 * caused them (the midpoint of the round, tried first, put a frame's H2D
 * 95 µs before its submit while other processes shared the GPU, whose
 * time-slicing delays the event towards the end of the round). Of several
 * rounds the tightest is kept, which leaves out the ones where this thread
 * was descheduled; its width bounds the error (anchor_window_ns).
 * cudaEventElapsedTime's float milliseconds keep µs precision for ~10 s
 * after the anchor: it is set again at every configure. */
int
cuda_anchor_clock(cuda_backend *b, char **msg)
{
  if (!b->anchor)
    CUDA_CHECK(cudaEventCreate(&b->anchor));
  if (!b->anchor_spare)
    CUDA_CHECK(cudaEventCreate(&b->anchor_spare));
  /* Nothing of ours may run ahead of the anchor, or it marks when that
   * work ended instead of when it was recorded. */
  for (unsigned i = 0; i < b->n_slots; i++)
    CUDA_CHECK(cudaStreamSynchronize(b->slots[i].stream));
  CUDA_CHECK(cudaStreamSynchronize(b->setup_stream));
  b->anchor_window_ns = INT64_MAX;
  for (int i = 0; i < 8; i++) { /* the first warms up */
    const int64_t before = pp_now_ns();
    CUDA_CHECK(cudaEventRecord(b->anchor_spare, b->setup_stream));
    CUDA_CHECK(cudaEventSynchronize(b->anchor_spare));
    const int64_t after = pp_now_ns();
    if (i > 0 && after - before < b->anchor_window_ns) {
      cudaEvent_t tightest = b->anchor_spare;
      b->anchor_spare = b->anchor;
      b->anchor = tightest;
      b->anchor_ns = after;
      b->anchor_window_ns = after - before;
    }
  }
  return 0;
}

/* One stage alone, `reps` times: 0 = upload, 1 = MLP, 2 = download. */
static int
time_stage(cuda_backend *b, int stage, const void *input, float *output, unsigned reps, double *us,
           char **msg)
{
  cuda_slot *s = &b->slots[0];
  g_autofree double *samples = g_new(double, reps);
  int rc = 0;
  for (unsigned i = 0; i < reps + 2 && rc == 0; i++) {
    CUDA_CHECK(pp_cuda_spin(s->stream, TIMING_LEAD_US));
    CUDA_CHECK(cudaEventRecord(s->ev_start, s->stream));
    if (stage == 0)
      CUDA_CHECK(cudaMemcpyAsync(s->d_in, input, b->layout.frame_bytes, cudaMemcpyHostToDevice,
                                 s->stream));
    else if (stage == 1)
      rc = pp_gpu_mlp_run(b, s, PP_N_PATHS, s->stream, msg);
    else
      CUDA_CHECK(
          cudaMemcpyAsync(output, s->d_out, b->out_bytes, cudaMemcpyDeviceToHost, s->stream));
    CUDA_CHECK(cudaEventRecord(s->ev_h2d, s->stream));
    CUDA_CHECK(cudaEventSynchronize(s->ev_h2d));
    float ms = 0;
    CUDA_CHECK(cudaEventElapsedTime(&ms, s->ev_start, s->ev_h2d));
    if (i >= 2) /* two warm-up runs */
      samples[i - 2] = ms * 1000.0;
  }
  if (rc == 0)
    *us = pp_median(samples, reps);
  return rc;
}

/* Before timing: configured, on our device, nothing else running. */
static int
ready_to_time(cuda_backend *b, unsigned reps, char **msg)
{
  if (b->n_slots == 0 || reps == 0) {
    *msg = g_strdup("the backend is not configured");
    return -EINVAL;
  }
  CUDA_CHECK(cuda_bind_context(b));
  cuda_sync(&b->base);
  return 0;
}

int
cuda_time_stages(pp_backend *base, const void *input, float *output, unsigned reps,
                 pp_cuda_stage_times *out, char **msg)
{
  cuda_backend *b = (cuda_backend *) base;
  int rc = ready_to_time(b, reps, msg);
  if (rc < 0)
    return rc;
  rc = time_stage(b, 0, input, output, reps, &out->h2d_us, msg);
  if (rc == 0)
    rc = time_stage(b, 1, input, output, reps, &out->mlp_us, msg);
  if (rc == 0)
    rc = time_stage(b, 2, input, output, reps, &out->d2h_us, msg);
  return rc;
}

int
cuda_time_paths(pp_backend *base, unsigned reps, double us[PP_N_PATHS], char **msg)
{
  cuda_backend *b = (cuda_backend *) base;
  const int ready = ready_to_time(b, reps, msg);
  return ready < 0 ? ready : pp_gpu_mlp_time_paths(b, reps, us, msg);
}
