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
                        const pp_reference_weights *w, bool tf32, float *x_scratch,
                        float *h_scratch, float *y)
{
  const float one = 1.0f, zero = 0.0f;
  TRY_BLAS(cublasSetStream(handle, stream));
  TRY_BLAS(cublasSetMathMode(handle, tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));

  const float *xf = x->data;
  if (x->kind != PP_A_F32 || x->ld != w->k) {
    TRY_KERNEL(pp_cuda_convert(stream, x, n, w->k, x_scratch, w->k));
    xf = x_scratch;
  }
  /* Row-major H[n×d] = X·W0ᵀ is column-major Hᵀ = W0ᵀᵀ·Xᵀ. */
  TRY_BLAS(cublasSgemm(handle, CUBLAS_OP_T, CUBLAS_OP_N, w->d, n, w->k, &one, w->w0, w->k, xf, w->k,
                       &zero, h_scratch, w->d));
  TRY_KERNEL(pp_cuda_bias_act(stream, h_scratch, n, w->d, w->d, w->b0, w->hidden_relu));
  if (w->o == 1)
    TRY_BLAS(
        cublasSgemv(handle, CUBLAS_OP_T, w->d, n, &one, h_scratch, w->d, w->w1, 1, &zero, y, 1));
  else
    TRY_BLAS(cublasSgemm(handle, CUBLAS_OP_T, CUBLAS_OP_N, w->o, n, w->d, &one, w->w1, w->d,
                         h_scratch, w->d, &zero, y, w->o));
  TRY_KERNEL(pp_cuda_bias_act(stream, y, n, w->o, w->o, w->b1, true));
  return CUBLAS_STATUS_SUCCESS;
}
