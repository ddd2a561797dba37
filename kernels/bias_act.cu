// SPDX-License-Identifier: LGPL-2.1-or-later
/* Bias and activation on their own, in place: the epilogue for GEMMs that
 * lack one (cuBLAS's plain sgemm in the reference path, cuBLASLt for the
 * activations its epilogues don't have). */
#include "cuda_kernels.h"

namespace
{

__global__ void
bias_act(float *__restrict__ c, unsigned m, unsigned n, unsigned ldc,
         const float *__restrict__ bias, pp_act act)
{
  const unsigned row = blockIdx.y;
  for (unsigned col = blockIdx.x * blockDim.x + threadIdx.x; col < n;
       col += gridDim.x * blockDim.x) {
    float *p = c + (size_t) row * ldc + col;
    *p = pp_act_apply(act, *p + (bias ? __ldg(bias + col) : 0.f));
  }
  (void) m;
}

} // namespace

extern "C" cudaError_t
pp_cuda_bias_act(cudaStream_t stream, float *c, uint32_t m, uint32_t n, uint32_t ldc,
                 const float *bias, pp_act act)
{
  if (!stream || !c || m == 0 || n == 0 || ldc < n || m > 65535u * 32)
    return cudaErrorInvalidValue;
  for (uint32_t first = 0; first < m; first += 65535) {
    const uint32_t rows = m - first < 65535 ? m - first : 65535;
    const dim3 grid((n + 255) / 256 < 8 ? (n + 255) / 256 : 8, rows);
    bias_act<<<grid, 256, 0, stream>>>(c + (size_t) first * ldc, rows, n, ldc, bias, act);
  }
  return cudaGetLastError();
}
