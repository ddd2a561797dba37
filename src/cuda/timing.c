/* Time on the device: the anchor that puts CUDA events on the host's clock
 * (for traces), and the stage and path timings the benchmark reads. */
#include <glib.h>

#include "backend_cuda_priv.h"
#include "stats.h"

/* Puts event times on the host's clock: an event recorded on an idle
 * stream runs between the host's calls around it, so its time is their
 * midpoint, within half their distance (a few µs, docs/PERFORMANCE.md).
 * cudaEventElapsedTime's float milliseconds keep µs precision for ~10 s
 * after the anchor: it is set again at every configure. */
int
cuda_anchor_clock(cuda_backend *b, char **msg)
{
  if (!b->anchor)
    CUDA_CHECK(cudaEventCreate(&b->anchor));
  /* Nothing of ours may run ahead of the anchor, or it marks when that
   * work ended instead of when it was recorded. */
  for (unsigned i = 0; i < b->n_slots; i++)
    CUDA_CHECK(cudaStreamSynchronize(b->slots[i].stream));
  CUDA_CHECK(cudaStreamSynchronize(b->setup_stream));
  /* The last round is the anchor, so rounds go on until one is as tight as
   * the tightest seen (at most 20). */
  int64_t best = INT64_MAX, window = INT64_MAX;
  for (int i = 0; i < 20 && (i < 4 || window > best); i++) {
    const int64_t before = pp_now_ns();
    CUDA_CHECK(cudaEventRecord(b->anchor, b->setup_stream));
    CUDA_CHECK(cudaEventSynchronize(b->anchor));
    const int64_t after = pp_now_ns();
    window = after - before;
    b->anchor_ns = before + window / 2;
    if (i > 0) /* the first warms up */
      best = MIN(best, window);
  }
  b->anchor_window_ns = window;
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
