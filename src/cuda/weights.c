/* The MLP's weights on the device, uploaded once per model: as nn.Linear
 * stores them (cuBLAS, the row-dot kernel) and transposed and padded (our
 * GEMMs), with the biases zero-padded. */
#include <string.h>

#include "backend_cuda_priv.h"

void
pp_gpu_mlp_free_weights(cuda_backend *b)
{
  for (unsigned i = 0; i < b->n_layers; i++) {
    cuda_layer *l = &b->layers[i];
    cudaFree(l->w);
    cudaFree(l->wt);
    cudaFree(l->b);
    pp_lt_gemm_destroy(l->lt);
    pp_lt_gemm_destroy(l->lt_chunk);
    pp_lt_gemm_destroy(l->lt_split);
    cudaFree(l->w_split);
    cudaFree(l->b_split);
  }
  memset(b->layers, 0, sizeof b->layers);
  b->n_layers = 0;
  b->model_id = 0;
}

/* Copies `count` floats to a new device buffer of `capacity` floats, the
 * rest zero. */
static int
upload(cuda_backend *b, float **dst, const float *src, size_t count, size_t capacity, char **msg)
{
  CUDA_CHECK(cudaMalloc((void **) dst, capacity * sizeof(float)));
  CUDA_CHECK(cudaMemsetAsync(*dst, 0, capacity * sizeof(float), b->setup_stream));
  if (src && count)
    CUDA_CHECK(
        cudaMemcpyAsync(*dst, src, count * sizeof(float), cudaMemcpyHostToDevice, b->setup_stream));
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

int
pp_gpu_mlp_load_weights(cuda_backend *b, const pp_model *m, char **msg)
{
  pp_gpu_mlp_free_weights(b);
  float *wts[PP_MAX_LAYERS] = { NULL };
  int rc = 0;
  b->n_layers = m->n_layers;
  for (unsigned i = 0; i < m->n_layers && rc == 0; i++) {
    const pp_layer *src = &m->layers[i];
    cuda_layer *l = &b->layers[i];
    l->in = src->in;
    l->out = src->out;
    l->ldw = pp_cuda_pad4(src->out);
    l->act = src->act;
    /* The row-dot kernel reads floats, so never the frame itself. */
    l->rowdot = i > 0 && i + 1 == m->n_layers && src->out <= PP_ROWDOT_MAX_O;
    const size_t weights = (size_t) src->out * src->in;
    wts[i] = transpose_padded(src->w, src->out, src->in, l->ldw);
    rc = upload(b, &l->w, src->w, weights, weights, msg);
    if (rc == 0)
      rc = upload(b, &l->wt, wts[i], (size_t) src->in * l->ldw, (size_t) src->in * l->ldw, msg);
    if (rc == 0 && src->b)
      rc = upload(b, &l->b, src->b, src->out, l->ldw, msg);
  }
  b->o = m->o;
  b->ldh = pp_cuda_pad4(pp_model_max_hidden(m));
  /* The host copies must outlive the asynchronous uploads. */
  const cudaError_t err = cudaStreamSynchronize(b->setup_stream);
  for (unsigned i = 0; i < PP_MAX_LAYERS; i++)
    g_free(wts[i]);
  if (rc == 0 && err != cudaSuccess)
    rc = pp_cuda_fail(msg, "uploading the weights", err, __FILE__, __LINE__);
  if (rc == 0)
    b->model_id = m->id;
  return rc;
}
