/* A first layer that reads a frame's bytes, on TF32 tensor cores near FP32's
 * accuracy (kernels/split_tf32.cu says why its products are exact): its
 * weights split at configure, once the frame's scale and bias are known.
 * seed's first layer (1024³): cuBLASLt's FP32 GEMM 67.4 µs, this 31.0 µs
 * (tools/seed-gemm-options, H100, docs/PERFORMANCE.md). The planner times
 * it against the other paths like any of them (mlp_plan.c). */
#include "backend_cuda_priv.h"

bool
cuda_split_fits(const cuda_backend *b)
{
  const pp_a_kind kind = b->slots[0].x.kind;
  return b->n_layers > 0 && b->n_slots > 0 && !b->layers[0].rowdot &&
         (kind == PP_A_U8_VEC4 || kind == PP_A_U8_GATHER);
}

unsigned
cuda_split_pieces(const cuda_backend *b)
{
  /* One TF32 piece is TF32's precision; two keep all of FP32's 24 bits. */
  return b->precision == PP_PRECISION_TF32 ? 1 : 2;
}

uint32_t
cuda_split_row(const cuda_backend *b)
{
  return cuda_split_pieces(b) * pp_cuda_split_kp(b->layout.k);
}

void
cuda_split_free(cuda_backend *b)
{
  cuda_layer *l = &b->layers[0];
  pp_lt_gemm_destroy(l->lt_split);
  cudaFree(l->w_split);
  cudaFree(l->b_split);
  l->lt_split = NULL;
  l->w_split = NULL;
  l->b_split = NULL;
}

int
cuda_split_weights(cuda_backend *b, char **msg)
{
  cuda_split_free(b);
  cuda_layer *l = &b->layers[0];
  const pp_cuda_a *x = &b->slots[0].x;
  CUDA_CHECK(cudaMalloc(&l->w_split, (size_t) l->out * cuda_split_row(b) * sizeof(float)));
  CUDA_CHECK(cudaMalloc((void **) &l->b_split, l->out * sizeof(float)));
  CUDA_CHECK(pp_cuda_split_weights(b->setup_stream, l->w, l->out, l->in, cuda_split_pieces(b),
                                   x->scale, x->bias, l->b, l->w_split, l->b_split));
  CUDA_CHECK(cudaStreamSynchronize(b->setup_stream));
  return 0;
}
