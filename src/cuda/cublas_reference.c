// SPDX-License-Identifier: LGPL-2.1-or-later
/* The MLP as plain cuBLAS calls, the reference the GPU tests and the
 * benchmark compare with. */
#include "cublas_reference.h"

#define TRY_BLAS(call)                                                                             \
  do {                                                                                             \
    const cublasStatus_t status_ = (call);                                                         \
    if (status_ != CUBLAS_STATUS_SUCCESS)                                                          \
      return status_;                                                                              \
  } while (0)
#define TRY_KERNEL(call)                                                                           \
  do {                                                                                             \
    if ((call) != cudaSuccess)                                                                     \
      return CUBLAS_STATUS_EXECUTION_FAILED;                                                       \
  } while (0)

int
pp_cublas_reference_mlp(cublasHandle_t handle, cudaStream_t stream, const pp_cuda_a *x, uint32_t n,
                        const pp_reference_layer *layers, unsigned n_layers, bool tf32,
                        float *x_scratch, float *const h_scratch[2], float *y)
{
  const float one = 1.0f, zero = 0.0f;
  if (n_layers == 0)
    return CUBLAS_STATUS_INVALID_VALUE;
  TRY_BLAS(cublasSetStream(handle, stream));
  TRY_BLAS(cublasSetMathMode(handle, tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));

  const uint32_t k = layers[0].in;
  const float *in = x->data;
  if (x->kind != PP_A_F32 || x->ld != k) {
    TRY_KERNEL(pp_cuda_convert(stream, x, n, k, x_scratch, k));
    in = x_scratch;
  }
  for (unsigned i = 0; i < n_layers; i++) {
    const pp_reference_layer *l = &layers[i];
    float *out = i + 1 == n_layers ? y : h_scratch[i % 2];
    /* Row-major OUT[n×out] = IN·Wᵀ is column-major OUTᵀ = Wᵀᵀ·INᵀ. */
    if (l->out == 1)
      TRY_BLAS(cublasSgemv(handle, CUBLAS_OP_T, l->in, n, &one, in, l->in, l->w, 1, &zero, out, 1));
    else
      TRY_BLAS(cublasSgemm(handle, CUBLAS_OP_T, CUBLAS_OP_N, l->out, n, l->in, &one, l->w, l->in,
                           in, l->in, &zero, out, l->out));
    TRY_KERNEL(pp_cuda_bias_act(stream, out, n, l->out, l->out, l->b, l->act));
    in = out;
  }
  return CUBLAS_STATUS_SUCCESS;
}
