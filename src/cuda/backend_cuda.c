/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The CUDA backend (pp_backend_ops): configure makes the plan and the
 * slots that run it (backend_configure.c); submit sends a frame on its
 * slot's stream as the plan says (frame_path.c) and hands it to
 * completion.c; finish copies a staged result out and reads stage times.
 * Per frame: no allocation, no wait, nothing on the default stream. */
#include "cuda_backend.h"

#include <cublas_api.h>

#include <errno.h>
#include <glib.h>
#include <string.h>

#include "backend_configure.h"
#include "check.h"
#include "error.h"
#include "frame.h"
#include "log.h"
#include "timing.h"

/* Stage times are read back for one frame in this many: reading them costs
 * the consumer thread a few microseconds. */
#define TIMING_PERIOD 8

/* ---- one frame ----------------------------------------------------------- */

/* The done signal a frame read in place raises, or 0 for its event: one
 * kernel doing the whole frame says it is done itself, which saves a
 * driver call on each side of a paced frame. Not on frames whose stage
 * times are read: those come from the events around the kernel. */
static unsigned
next_signal(cuda_backend *b, pp_cuda_slot *s, const void *src)
{
  if (!src || !b->plan.signal || s->timed || b->plan.frames != PP_FRAMES_IN_PLACE ||
      !pp_mlp_exec_can_signal(&b->plan))
    return 0;
  if (++s->last_seq == 0) /* 0 means no signal */
    s->last_seq = 1;
  return s->last_seq;
}

/* The frame's event, and the frame to the completion's waiter. */
static int
hand_over(cuda_backend *b, unsigned index, cudaStream_t last, int64_t submitted, char **msg)
{
  pp_cuda_slot *s = &b->slots[index];
  if (!s->signal_seq) {
    const cudaError_t err = cudaEventRecord(s->ev_done, last);
    if (err != cudaSuccess) {
      pp_cuda_slot_sync(s);
      return pp_cuda_fail(msg, "cudaEventRecord", err, __FILE__, __LINE__);
    }
  }
  const pp_pending_frame f = { s->ev_done, s->done_flag, s->signal_seq, last, submitted };
  pp_cuda_completion_add(b->waiter, index, &f);
  return 0;
}

/* A batch of frames (a shared backend's), on a backend configured for
 * them. */
static int
submit_batch(cuda_backend *b, unsigned index, const pp_job *job, int64_t submitted, char **msg)
{
  pp_cuda_slot *s = &b->slots[index];
  if (!job->n_batch || b->batch <= 1) {
    *msg = g_strdup_printf("a job of %u frames on a backend configured for batches of %u",
                           MAX(job->n_batch, 1u), b->batch);
    return -EINVAL;
  }
  for (unsigned i = 0; i < job->n_batch && i < b->batch; i++) {
    const pp_job *f = &job->batch[i];
    if (f->input_on_device)
      __atomic_add_fetch(&b->base.device_inputs, 1, __ATOMIC_RELAXED);
    else if (!f->input_pinned)
      __atomic_add_fetch(&b->base.staged_inputs, 1, __ATOMIC_RELAXED);
  }
  s->timed = s->frames++ % (b->time_every_frame ? 1 : TIMING_PERIOD) == 0;
  s->signal_seq = 0;
  s->batch_frames = job->n_batch;
  const int rc = pp_frame_enqueue_batch(&b->path, s, job, msg);
  if (rc < 0) {
    /* Whatever part of it was queued finishes before we say no. */
    pp_cuda_slot_sync(s);
    return rc;
  }
  return hand_over(b, index, s->stream, submitted, msg);
}

static int
cuda_submit(pp_backend *base, unsigned index, const pp_job *job, char **msg)
{
  cuda_backend *b = (cuda_backend *) base;
  pp_cuda_slot *s = &b->slots[index];
  const int64_t submitted = pp_now_ns();
  CUDA_CHECK(pp_cuda_device_bind(&b->device));
  if (b->batch > 1 || job->n_batch)
    return submit_batch(b, index, job, submitted, msg);
  const void *src = job->input;
  if (job->input_on_device) {
    src = NULL;
    __atomic_add_fetch(&base->device_inputs, 1, __ATOMIC_RELAXED);
  } else if (!job->input_pinned) {
    memcpy(s->staging_in, job->input, b->layout.frame_bytes);
    src = s->staging_in;
    __atomic_add_fetch(&base->staged_inputs, 1, __ATOMIC_RELAXED);
  }
  float *dst = job->output_pinned ? job->output : s->staging_out;
  s->staged_out = !job->output_pinned;
  s->timed = s->frames++ % (b->time_every_frame ? 1 : TIMING_PERIOD) == 0;
  s->signal_seq = next_signal(b, s, src);
  const int rc = pp_frame_enqueue(&b->path, s, src, job, dst, msg);
  if (rc < 0) {
    /* Whatever part of the frame was queued finishes before we say no. */
    pp_cuda_slot_sync(s);
    return rc;
  }
  return hand_over(b, index, pp_frame_last_stream(&b->path, s, src), submitted, msg);
}

/* completion.c saw slot `slot`'s frame done (or failed). */
static void
report(void *data, unsigned slot, cudaError_t err)
{
  cuda_backend *b = data;
  const pp_cuda_slot *s = &b->slots[slot];
  char *msg = NULL;
  if (err != cudaSuccess)
    pp_cuda_fail(&msg, "a frame's work on the GPU", err, __FILE__, __LINE__);
  b->base.complete(b->base.complete_data, slot, err == cudaSuccess ? 0 : -EIO, msg,
                   err == cudaSuccess && !s->staged_out && !s->timed);
  g_clear_pointer(&msg, g_free);
}

static int
cuda_wait(pp_backend *base, unsigned slot, int64_t timeout_ns)
{
  return pp_cuda_completion_wait(((cuda_backend *) base)->waiter, slot, timeout_ns);
}

static int
cuda_finish(pp_backend *base, unsigned index, const pp_job *job, pp_stage_times *times)
{
  cuda_backend *b = (cuda_backend *) base;
  pp_cuda_slot *s = &b->slots[index];
  if (s->staged_out && job->n_batch) {
    const size_t results = (size_t) b->one.n * b->weights.o;
    for (unsigned i = 0; i < job->n_batch && i < s->batch_frames; i++)
      if (!job->batch[i].output_pinned)
        memcpy(job->batch[i].output, s->staging_out + i * results, results * sizeof(float));
  } else if (s->staged_out) {
    memcpy(job->output, s->staging_out, s->out_bytes);
  }
  if (!s->timed)
    return 0;
  /* A shared backend's lanes finish on their own threads. */
  if (pp_cuda_device_bind(&b->device) != cudaSuccess)
    return 0;
  /* A frame signalled done from the GPU (signal=on) may be handed back
   * before the events after its kernels complete: then it goes unsampled.
   * Queried first, as cudaEventElapsedTime would fail on them (an error
   * compute-sanitizer reports, where a query's "not ready" is none). */
  const cudaEvent_t events[] = { s->ev_start, s->ev_h2d, s->ev_mlp, s->ev_d2h };
  for (size_t i = 0; i < G_N_ELEMENTS(events); i++)
    if (cudaEventQuery(events[i]) != cudaSuccess)
      return 0;
  float h2d = -1, mlp = -1, d2h = -1;
  if (cudaEventElapsedTime(&h2d, s->ev_start, s->ev_h2d) != cudaSuccess ||
      cudaEventElapsedTime(&mlp, s->ev_h2d, s->ev_mlp) != cudaSuccess ||
      cudaEventElapsedTime(&d2h, s->ev_mlp, s->ev_d2h) != cudaSuccess)
    return 0;
  *times =
      (pp_stage_times){ .h2d_us = h2d * 1000.0, .mlp_us = mlp * 1000.0, .d2h_us = d2h * 1000.0 };
  const int64_t start = pp_gpu_anchor_time(&b->anchor, s->ev_start);
  if (start) {
    times->h2d_start_ns = start;
    times->mlp_start_ns = start + (int64_t) (h2d * 1e6);
    times->d2h_start_ns = times->mlp_start_ns + (int64_t) (mlp * 1e6);
  }
  return 0;
}

static int
cuda_sync(pp_backend *base)
{
  cuda_backend *b = (cuda_backend *) base;
  pp_cuda_device_bind(&b->device);
  for (unsigned i = 0; i < b->n_slots; i++)
    pp_cuda_slot_sync(&b->slots[i]);
  pp_cuda_completion_drain(b->waiter);
  return 0;
}

static int
cuda_poll(pp_backend *base, unsigned index, char **msg)
{
  cuda_backend *b = (cuda_backend *) base;
  CUDA_CHECK(pp_cuda_device_bind(&b->device));
  const pp_cuda_slot *s = &b->slots[index];
  const cudaStream_t streams[] = { s->stream, s->compute, s->copy_out };
  for (size_t i = 0; i < G_N_ELEMENTS(streams); i++) {
    const cudaError_t err = cudaStreamQuery(streams[i]);
    if (err != cudaSuccess && err != cudaErrorNotReady)
      return pp_cuda_fail(msg, "a frame's work on the GPU", err, __FILE__, __LINE__);
  }
  return 0;
}

/* An empty kernel on the set-up stream, looked at once: a thread that slept
 * pays several times more for its next launch than one that launched
 * recently (docs/PERFORMANCE.md, "Pre-wake for paced streams"). */
static void
cuda_warm(pp_backend *base)
{
  cuda_backend *b = (cuda_backend *) base;
  if (pp_cuda_device_bind(&b->device) == cudaSuccess &&
      pp_cuda_spin(b->device.setup, 0) == cudaSuccess)
    cudaStreamQuery(b->device.setup);
}

static const char *
cuda_describe(pp_backend *base)
{
  return ((cuda_backend *) base)->detail;
}

static void
cuda_plan_info(pp_backend *base, pp_plan_info *info)
{
  cuda_backend *b = (cuda_backend *) base;
  *info = (pp_plan_info){ b->plan_line, b->plan_source, b->plan_refused, b->startup,
                          pp_cuda_plan_uses_cublas(&b->plan) };
}

static const char *
cuda_plan_key(pp_backend *base)
{
  return ((cuda_backend *) base)->key;
}

static void
cuda_destroy(pp_backend *base)
{
  cuda_backend *b = (cuda_backend *) base;
  pp_cuda_device_bind(&b->device);
  cuda_sync(base);
  pp_cuda_completion_free(b->waiter);
  pp_cuda_backend_unconfigure(b);
  pp_gpu_anchor_free(&b->anchor);
  pp_gpu_weights_free(&b->weights);
  pp_cuda_device_close(&b->device);
  g_free(b);
}

static const pp_backend_ops cuda_ops = {
  .abi = PP_BACKEND_ABI,
  .name = "cuda",
  .configure = pp_cuda_backend_configure,
  .submit = cuda_submit,
  .finish = cuda_finish,
  .sync = cuda_sync,
  .destroy = cuda_destroy,
  .poll = cuda_poll,
  .describe = cuda_describe,
  .warm = cuda_warm,
  .plan_info = cuda_plan_info,
  .plan_key = cuda_plan_key,
};

int
cuda_backend_new(const pp_backend_options *opts, pp_backend **out, char **msg)
{
  if (opts->completion != PP_COMPLETION_CONSUMER &&
      opts->completion != PP_COMPLETION_EVENT_THREAD) {
    *msg = g_strdup("the CUDA backend needs completion resolved to consumer or event-thread");
    return -EINVAL;
  }
  cuda_backend *b = g_new0(cuda_backend, 1);
  b->ops = cuda_ops;
  if (opts->completion == PP_COMPLETION_CONSUMER)
    b->ops.wait = cuda_wait;
  b->base.ops = &b->ops;
  b->precision = opts->precision;
  b->completion = opts->completion;
  b->time_every_frame = opts->time_every_frame;
  const int64_t t0 = pp_now_ns();
  const int rc = pp_cuda_device_open(&b->device, opts->device_id, opts->cuda_context, msg);
  if (rc < 0) {
    pp_cuda_device_close(&b->device);
    g_free(b);
    return rc;
  }
  b->startup.open_ms = pp_ms_since(t0);
  /* A plan made before the planner had a kernel never weighed it: the
   * kernels' version in the key makes such plans be made again. */
  g_snprintf(b->key, sizeof b->key, "cuda %s cublas=%d abi=%d kernels=%d", b->device.identity,
             CUBLAS_VERSION, PP_BACKEND_ABI, PP_CUDA_KERNELS_VERSION);
  b->waiter = pp_cuda_completion_new(b->completion, &b->device, report, b);
  *out = &b->base;
  return 0;
}

/* ---- for the benchmark's timings (bench_timing.c) -------------------------- */

bool
cuda_backend_parts(pp_backend *base, pp_cuda_parts *parts)
{
  cuda_backend *b = (cuda_backend *) base;
  if (!b->n_slots)
    return false;
  *parts = (pp_cuda_parts){ &b->device, &b->weights,  b->exec,   &b->plan,
                            &b->layout, &b->slots[0], b->n_slots };
  return true;
}
