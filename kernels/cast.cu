// SPDX-License-Identifier: LGPL-2.1-or-later
/* Floats to another element type: the weights' copies for a precision,
 * made once at configure. */
#include "cuda_kernels.h"
#include "dtype.cuh"

namespace
{

/* dst = src rounded to R, stored as S (S is R, or float holding R's
 * values); dst may be src (rounding floats in place). */
template <typename R, typename S>
__global__ void
cast(const float *src, size_t count, S *dst)
{
  for (size_t i = blockIdx.x * (size_t) blockDim.x + threadIdx.x; i < count;
       i += (size_t) gridDim.x * blockDim.x)
    dst[i] = pp::from_float<S>(pp::to_float(pp::from_float<R>(src[i])));
}

} // namespace

extern "C" cudaError_t
pp_cuda_cast(cudaStream_t stream, const float *src, size_t count, pp_dtype to, bool as_floats,
             void *dst)
{
  if (!stream || !src || !dst || count == 0 || to >= PP_N_DTYPES)
    return cudaErrorInvalidValue;
  const unsigned blocks = count / 256 + 1 < 1024 ? (unsigned) (count / 256 + 1) : 1024;
  PP_DTYPE_DISPATCH(to, R, {
    if (as_floats)
      cast<R, float><<<blocks, 256, 0, stream>>>(src, count, static_cast<float *>(dst));
    else
      cast<R, R><<<blocks, 256, 0, stream>>>(src, count, static_cast<R *>(dst));
  });
  return cudaGetLastError();
}
