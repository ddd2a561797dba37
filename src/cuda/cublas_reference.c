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

static cudaDataType_t
data_type(pp_dtype t)
{
  return t == PP_DTYPE_BF16 ? CUDA_R_16BF : t == PP_DTYPE_F16 ? CUDA_R_16F : CUDA_R_32F;
}

/* Row-major OUT[n×out] = IN·Wᵀ is column-major OUTᵀ = Wᵀᵀ·INᵀ. */
static cublasStatus_t
layer_gemm(cublasHandle_t handle, const pp_reference_layer *l, uint32_t n, pp_dtype dtype,
           const void *in, void *out, pp_dtype out_type)
{
  const float one = 1.0f, zero = 0.0f;
  if (dtype != PP_DTYPE_F32)
    return cublasGemmEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, l->out, n, l->in, &one, l->w,
                        data_type(dtype), l->in, in, data_type(dtype), l->in, &zero, out,
                        data_type(out_type), l->out, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  if (l->out == 1)
    return cublasSgemv(handle, CUBLAS_OP_T, l->in, n, &one, in, l->in, l->w, 1, &zero, out, 1);
  return cublasSgemm(handle, CUBLAS_OP_T, CUBLAS_OP_N, l->out, n, l->in, &one, l->w, l->in, in,
                     l->in, &zero, out, l->out);
}

int
pp_cublas_reference_mlp(cublasHandle_t handle, cudaStream_t stream, const pp_cuda_a *x, uint32_t n,
                        const pp_reference_layer *layers, unsigned n_layers, bool tf32,
                        pp_dtype dtype, void *x_scratch, void *const h_scratch[2], float *y)
{
  if (n_layers == 0)
    return CUBLAS_STATUS_INVALID_VALUE;
  TRY_BLAS(cublasSetStream(handle, stream));
  TRY_BLAS(cublasSetMathMode(handle, tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));

  const uint32_t k = layers[0].in;
  const void *in = x->data;
  if (x->kind != PP_A_F32 || x->ld != k || dtype != PP_DTYPE_F32) {
    TRY_KERNEL(pp_cuda_convert(stream, x, n, k, x_scratch, k, dtype));
    in = x_scratch;
  }
  for (unsigned i = 0; i < n_layers; i++) {
    const pp_reference_layer *l = &layers[i];
    const bool last = i + 1 == n_layers;
    void *out = last ? y : h_scratch[i % 2];
    const pp_dtype out_type = last ? PP_DTYPE_F32 : dtype;
    TRY_BLAS(layer_gemm(handle, l, n, dtype, in, out, out_type));
    TRY_KERNEL(pp_cuda_bias_act(stream, out, out_type, n, l->out, l->out, l->b, l->act));
    in = out;
  }
  return CUBLAS_STATUS_SUCCESS;
}
