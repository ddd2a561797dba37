/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A model's weights uploaded once, in every form the kernels and cuBLAS
 * read. */
#include "weights.h"

#include <glib.h>
#include <string.h>

#include "check.h"
#include "cuda_kernels.h"

void
pp_gpu_weights_free(pp_gpu_weights *w)
{
  for (unsigned i = 0; i < w->n_layers; i++) {
    cudaFree(w->layers[i].w);
    cudaFree(w->layers[i].wt);
    cudaFree(w->layers[i].b);
    cudaFree(w->layers[i].w16);
    cudaFree(w->layers[i].b16);
  }
  memset(w, 0, sizeof *w);
}

/* `count` floats to a new device buffer of `capacity`, the rest zero. */
static int
upload(float **dst, const float *src, size_t count, size_t capacity, cudaStream_t stream,
       char **msg)
{
  CUDA_CHECK(cudaMalloc((void **) dst, capacity * sizeof(float)));
  CUDA_CHECK(cudaMemsetAsync(*dst, 0, capacity * sizeof(float), stream));
  if (src && count)
    CUDA_CHECK(cudaMemcpyAsync(*dst, src, count * sizeof(float), cudaMemcpyHostToDevice, stream));
  return 0;
}

/* W [rows×cols] → Wt [cols×ld], zero-padded past `rows`. */
static float *
transpose_padded(const float *w, uint32_t rows, uint32_t cols, uint32_t ld)
{
  float *t = g_new0(float, (size_t) cols *ld);
  for (uint32_t r = 0; r < rows; r++)
    for (uint32_t c = 0; c < cols; c++)
      t[(size_t) c * ld + r] = w[(size_t) r * cols + c];
  return t;
}

/* The floats of `count` rounded to `t` in place, and a copy in `t`. */
static int
round_to(pp_dtype t, float *floats, size_t count, void **copy, cudaStream_t stream, char **msg)
{
  CUDA_CHECK(pp_cuda_cast(stream, floats, count, t, true, floats));
  CUDA_CHECK(cudaMalloc(copy, count * pp_dtype_size(t)));
  CUDA_CHECK(pp_cuda_cast(stream, floats, count, t, false, *copy));
  return 0;
}

static int
round_layer(pp_gpu_layer *l, pp_dtype t, cudaStream_t stream, char **msg)
{
  CUDA_CHECK(pp_cuda_cast(stream, l->wt, (size_t) l->in * l->ldw, t, true, l->wt));
  int rc = round_to(t, l->w, (size_t) l->out * l->in, &l->w16, stream, msg);
  if (rc == 0 && l->b)
    rc = round_to(t, l->b, l->ldw, &l->b16, stream, msg);
  return rc;
}

int
pp_gpu_weights_upload(pp_gpu_weights *w, const pp_model *m, pp_dtype dtype, cudaStream_t stream,
                      char **msg)
{
  pp_gpu_weights_free(w);
  w->dtype = dtype;
  float *transposed[PP_MAX_LAYERS] = { NULL };
  int rc = 0;
  w->n_layers = m->n_layers;
  for (unsigned i = 0; i < m->n_layers && rc == 0; i++) {
    const pp_layer *src = &m->layers[i];
    pp_gpu_layer *l = &w->layers[i];
    *l = (pp_gpu_layer){
      .in = src->in, .out = src->out, .ldw = pp_cuda_pad4(src->out), .act = src->act
    };
    const size_t weights = (size_t) src->out * src->in;
    transposed[i] = transpose_padded(src->w, src->out, src->in, l->ldw);
    rc = upload(&l->w, src->w, weights, weights, stream, msg);
    if (rc == 0)
      rc = upload(&l->wt, transposed[i], (size_t) src->in * l->ldw, (size_t) src->in * l->ldw,
                  stream, msg);
    if (rc == 0 && src->b)
      rc = upload(&l->b, src->b, src->out, l->ldw, stream, msg);
    if (rc == 0 && dtype != PP_DTYPE_F32)
      rc = round_layer(l, dtype, stream, msg);
  }
  w->o = m->o;
  w->ldh = pp_cuda_pad4(pp_model_max_hidden(m));
  const cudaError_t err = cudaStreamSynchronize(stream);
  for (unsigned i = 0; i < PP_MAX_LAYERS; i++)
    g_free(transposed[i]);
  if (rc == 0 && err != cudaSuccess)
    rc = pp_cuda_fail(msg, "uploading the weights", err, __FILE__, __LINE__);
  if (rc == 0)
    w->model_id = m->id;
  else
    pp_gpu_weights_free(w);
  return rc;
}
