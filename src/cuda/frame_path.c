/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* One frame's way across the GPU, whole or in chunks, as its plan says. */
#include "frame_path.h"

#include <errno.h>
#include <glib.h>
#include <string.h>

#include "check.h"

bool
pp_frame_chunks_fit(const pp_frame_layout *l, const pp_cuda_a *x, unsigned c)
{
  const uint32_t per_row = x->kind == PP_A_F32 ? 1 : x->per_row;
  if (c < 2 || c > PP_MAX_CHUNKS || l->is_yuv || l->n_planes > 1 || l->n % per_row != 0)
    return false;
  return (l->n / per_row) % c == 0;
}

/* Chunk j's bytes start at chunk_offset[j]; the last runs to the end of the
 * frame, so bytes no sample reads still cross. */
void
pp_frame_path_set_chunks(pp_frame_path *p, const pp_cuda_a *x)
{
  const unsigned c = p->plan->frames == PP_FRAMES_CHUNKS ? p->plan->chunks : 1;
  const uint32_t rows = p->layout->n / c;
  for (unsigned j = 0; j < c; j++) {
    const size_t row0 = (size_t) j * rows;
    p->chunk_offset[j] =
        x->kind == PP_A_F32 ? row0 * x->ld * sizeof(float) : row0 / x->per_row * x->row_step;
  }
  p->chunk_offset[c] = p->layout->frame_bytes;
}

/* A timing event, only on the frames whose stage times are read. */
static cudaError_t
mark(const pp_cuda_slot *s, cudaEvent_t event, cudaStream_t stream)
{
  return s->timed ? cudaEventRecord(event, stream) : cudaSuccess;
}

/* A frame already on the device: each plane copied into the slot's frame
 * at the layout's strides by a kernel, so the slot's graph reads it where
 * it reads uploaded frames, whatever pitch upstream allocated with. */
static cudaError_t
gather_device_planes(const pp_frame_layout *l, pp_cuda_slot *s, size_t at, const pp_job *job)
{
  for (uint32_t i = 0; i < l->n_planes; i++) {
    const pp_plane *plane = &l->planes[i];
    const cudaError_t err =
        pp_cuda_copy_2d(s->stream, (uint8_t *) s->d_in + at + plane->offset, plane->stride,
                        job->device_planes[i], job->device_pitch[i], plane->row_bytes, plane->rows);
    if (err != cudaSuccess)
      return err;
  }
  return cudaSuccess;
}

static int
enqueue_mlp(const pp_frame_path *p, pp_cuda_slot *s, char **msg)
{
  if (s->exec) {
    CUDA_CHECK(cudaGraphLaunch(s->exec, s->stream));
    return 0;
  }
  const pp_mlp_rows whole = { 0, p->layout->n, NULL, NULL, 0 };
  return pp_mlp_exec_run(p->exec, p->plan, &s->buf, &whole, s->stream, msg);
}

/* Its time counts as the MLP's; the copies take none. */
static int
enqueue_in_place(const pp_frame_path *p, pp_cuda_slot *s, const void *src, float *dst, char **msg)
{
  CUDA_CHECK(mark(s, s->ev_start, s->stream));
  CUDA_CHECK(mark(s, s->ev_h2d, s->stream));
  const pp_mlp_rows rows = { 0, p->layout->n, src, dst, s->signal_seq };
  const int rc =
      pp_mlp_exec_run_in_place(p->exec, p->plan, &s->buf, &rows, s->between, s->stream, msg);
  if (rc < 0)
    return rc;
  CUDA_CHECK(mark(s, s->ev_mlp, s->stream));
  CUDA_CHECK(mark(s, s->ev_d2h, s->stream));
  return 0;
}

static int
enqueue_chunk_mlp(const pp_frame_path *p, pp_cuda_slot *s, unsigned j, uint32_t rows, char **msg)
{
  if (s->chunk[j]) {
    CUDA_CHECK(cudaGraphLaunch(s->chunk[j], s->compute));
    return 0;
  }
  const pp_mlp_rows chunk = { j * rows, rows, NULL, NULL, 0 };
  return pp_mlp_exec_run(p->exec, p->plan, &s->buf, &chunk, s->compute, msg);
}

/* Every upload first: the copy engine is the critical path of the frames
 * that chunks help, and the MLP launches overlap the first chunk's copy. */
static int
enqueue_chunks(const pp_frame_path *p, pp_cuda_slot *s, const void *src, float *dst, char **msg)
{
  const unsigned c = p->plan->chunks;
  const uint32_t rows = p->layout->n / c;
  const size_t out_floats = (size_t) rows * p->o;
  CUDA_CHECK(mark(s, s->ev_start, s->stream));
  for (unsigned j = 0; j < c; j++) {
    const size_t at = p->chunk_offset[j], bytes = p->chunk_offset[j + 1] - at;
    CUDA_CHECK(cudaMemcpyAsync((uint8_t *) s->d_in + at, (const uint8_t *) src + at, bytes,
                               cudaMemcpyHostToDevice, s->stream));
    CUDA_CHECK(cudaEventRecord(s->ev_in[j], s->stream));
  }
  CUDA_CHECK(mark(s, s->ev_h2d, s->stream));
  for (unsigned j = 0; j < c; j++) {
    CUDA_CHECK(cudaStreamWaitEvent(s->compute, s->ev_in[j], 0));
    const int rc = enqueue_chunk_mlp(p, s, j, rows, msg);
    if (rc < 0)
      return rc;
    CUDA_CHECK(cudaEventRecord(s->ev_out[j], s->compute));
  }
  CUDA_CHECK(mark(s, s->ev_mlp, s->compute));
  for (unsigned j = 0; j < c; j++) {
    CUDA_CHECK(cudaStreamWaitEvent(s->copy_out, s->ev_out[j], 0));
    CUDA_CHECK(cudaMemcpyAsync(dst + j * out_floats, s->buf.d_out + j * out_floats,
                               out_floats * sizeof(float), cudaMemcpyDeviceToHost, s->copy_out));
  }
  CUDA_CHECK(mark(s, s->ev_d2h, s->copy_out));
  return 0;
}

int
pp_frame_enqueue(const pp_frame_path *p, pp_cuda_slot *s, const void *src, const pp_job *job,
                 float *dst, char **msg)
{
  if (src && p->plan->frames == PP_FRAMES_IN_PLACE)
    return enqueue_in_place(p, s, src, dst, msg);
  if (src && p->plan->frames == PP_FRAMES_CHUNKS)
    return enqueue_chunks(p, s, src, dst, msg);
  cudaError_t err = mark(s, s->ev_start, s->stream);
  if (err == cudaSuccess)
    err = src ? cudaMemcpyAsync(s->d_in, src, p->layout->frame_bytes, cudaMemcpyHostToDevice,
                                s->stream)
              : gather_device_planes(p->layout, s, 0, job);
  if (err == cudaSuccess)
    err = mark(s, s->ev_h2d, s->stream);
  if (err != cudaSuccess)
    return pp_cuda_fail(msg, "uploading a frame", err, __FILE__, __LINE__);
  const int rc = enqueue_mlp(p, s, msg);
  if (rc < 0)
    return rc;
  err = mark(s, s->ev_mlp, s->stream);
  if (err == cudaSuccess)
    err = cudaMemcpyAsync(dst, s->buf.d_out, s->out_bytes, cudaMemcpyDeviceToHost, s->stream);
  if (err == cudaSuccess)
    err = mark(s, s->ev_d2h, s->stream);
  if (err != cudaSuccess)
    return pp_cuda_fail(msg, "downloading a result", err, __FILE__, __LINE__);
  return 0;
}

/* Each frame to its place in the slot's frame: from the device, from
 * pinned memory, or through the slot's staging at the same place. */
static cudaError_t
upload_batch(const pp_frame_path *p, pp_cuda_slot *s, const pp_job *job)
{
  const size_t bytes = p->one->frame_bytes;
  for (unsigned i = 0; i < job->n_batch; i++) {
    const pp_job *f = &job->batch[i];
    const size_t at = i * bytes;
    if (f->input_on_device) {
      const cudaError_t err = gather_device_planes(p->one, s, at, f);
      if (err != cudaSuccess)
        return err;
      continue;
    }
    const void *src = f->input;
    if (!f->input_pinned) {
      memcpy((uint8_t *) s->staging_in + at, f->input, bytes);
      src = (const uint8_t *) s->staging_in + at;
    }
    const cudaError_t err =
        cudaMemcpyAsync((uint8_t *) s->d_in + at, src, bytes, cudaMemcpyHostToDevice, s->stream);
    if (err != cudaSuccess)
      return err;
  }
  return cudaSuccess;
}

int
pp_frame_enqueue_batch(const pp_frame_path *p, pp_cuda_slot *s, const pp_job *job, char **msg)
{
  const unsigned n = job->n_batch;
  if (n == 0 || n > p->batch) {
    *msg = g_strdup_printf("a batch of %u frames on a backend made for %u", n, p->batch);
    return -EINVAL;
  }
  cudaError_t err = mark(s, s->ev_start, s->stream);
  if (err == cudaSuccess)
    err = upload_batch(p, s, job);
  if (err == cudaSuccess)
    err = mark(s, s->ev_h2d, s->stream);
  if (err != cudaSuccess)
    return pp_cuda_fail(msg, "uploading a batch of frames", err, __FILE__, __LINE__);
  /* The whole batch's graph, or the kernels over these frames' samples. */
  const uint32_t rows = n == p->batch || !p->partial_rows ? p->layout->n : n * p->one->n;
  int rc = 0;
  if (rows == p->layout->n) {
    rc = enqueue_mlp(p, s, msg);
  } else {
    const pp_mlp_rows some = { 0, rows, NULL, NULL, 0 };
    rc = pp_mlp_exec_run(p->exec, p->plan, &s->buf, &some, s->stream, msg);
  }
  if (rc < 0)
    return rc;
  err = mark(s, s->ev_mlp, s->stream);
  const size_t results = (size_t) p->one->n * p->o;
  s->staged_out = false;
  for (unsigned i = 0; i < n && err == cudaSuccess; i++) {
    const pp_job *f = &job->batch[i];
    float *dst = f->output_pinned ? f->output : s->staging_out + i * results;
    s->staged_out |= !f->output_pinned;
    err = cudaMemcpyAsync(dst, s->buf.d_out + i * results, results * sizeof(float),
                          cudaMemcpyDeviceToHost, s->stream);
  }
  if (err == cudaSuccess)
    err = mark(s, s->ev_d2h, s->stream);
  if (err != cudaSuccess)
    return pp_cuda_fail(msg, "downloading a batch's results", err, __FILE__, __LINE__);
  return 0;
}

cudaStream_t
pp_frame_last_stream(const pp_frame_path *p, const pp_cuda_slot *s, const void *src)
{
  return src && p->plan->frames == PP_FRAMES_CHUNKS ? s->copy_out : s->stream;
}
