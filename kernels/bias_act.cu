// SPDX-License-Identifier: LGPL-2.1-or-later
/* Bias and activation on their own, in place: the epilogue for GEMMs that
 * lack one (cuBLAS's plain sgemm in the reference path, cuBLASLt for the
 * activations its epilogues don't have). Memory-bound: rows that are
 * whole 16-byte vectors (4 floats, 8 16-bit values) move as such. */
#include "cuda_kernels.h"
#include "dtype.cuh"

namespace
{

template <typename T> constexpr unsigned kVec = 16 / sizeof(T);
/* Blocks of the vector kernel's grid-stride loop: enough to fill any GPU
 * (a few per SM), few enough that each loops over many vectors. */
constexpr unsigned kVecBlocks = 4096;

/* One element a thread, a row per blockIdx.y: any shape. */
template <typename T>
__global__ void
bias_act(T *__restrict__ c, unsigned n, unsigned ldc, const float *__restrict__ bias, pp_act act)
{
  const unsigned row = blockIdx.y;
  for (unsigned col = blockIdx.x * blockDim.x + threadIdx.x; col < n;
       col += gridDim.x * blockDim.x) {
    T *p = c + (size_t) row * ldc + col;
    *p = pp::from_float<T>(pp_act_apply(act, pp::to_float(*p) + (bias ? __ldg(bias + col) : 0.f)));
  }
}

/* kVec elements a thread over m rows of n = v·kVec. */
template <typename T>
__global__ void
bias_act_vec(T *__restrict__ c, unsigned m, unsigned v, unsigned ldc,
             const float *__restrict__ bias, pp_act act)
{
  const size_t chunks = (size_t) m * v;
  for (size_t i = blockIdx.x * (size_t) blockDim.x + threadIdx.x; i < chunks;
       i += (size_t) gridDim.x * blockDim.x) {
    const unsigned row = (unsigned) (i / v), col = (unsigned) (i % v) * kVec<T>;
    uint4 *p = reinterpret_cast<uint4 *>(c + (size_t) row * ldc + col);
    uint4 bits = *p;
    T *e = reinterpret_cast<T *>(&bits);
#pragma unroll
    for (unsigned j = 0; j < kVec<T>; j++)
      e[j] = pp::from_float<T>(
          pp_act_apply(act, pp::to_float(e[j]) + (bias ? __ldg(bias + col + j) : 0.f)));
    *p = bits;
  }
}

template <typename T>
cudaError_t
launch(cudaStream_t stream, T *c, uint32_t m, uint32_t n, uint32_t ldc, const float *bias,
       pp_act act)
{
  if (n % kVec<T> == 0 && ldc % kVec<T> == 0 && (reinterpret_cast<size_t>(c) & 15) == 0) {
    const size_t chunks = (size_t) m * (n / kVec<T>);
    const unsigned grid =
        chunks / 256 + 1 < kVecBlocks ? (unsigned) (chunks / 256 + 1) : kVecBlocks;
    bias_act_vec<T><<<grid, 256, 0, stream>>>(c, m, n / kVec<T>, ldc, bias, act);
    return cudaGetLastError();
  }
  for (uint32_t first = 0; first < m; first += 65535) {
    const uint32_t rows = m - first < 65535 ? m - first : 65535;
    const dim3 grid((n + 255) / 256 < 8 ? (n + 255) / 256 : 8, rows);
    bias_act<T><<<grid, 256, 0, stream>>>(c + (size_t) first * ldc, n, ldc, bias, act);
  }
  return cudaGetLastError();
}

} // namespace

extern "C" cudaError_t
pp_cuda_bias_act(cudaStream_t stream, void *c, pp_dtype type, uint32_t m, uint32_t n, uint32_t ldc,
                 const float *bias, pp_act act)
{
  if (!stream || !c || m == 0 || n == 0 || ldc < n || m > 65535u * 32 || type >= PP_N_DTYPES)
    return cudaErrorInvalidValue;
  cudaError_t err = cudaSuccess;
  PP_DTYPE_DISPATCH(type, T, err = launch(stream, static_cast<T *>(c), m, n, ldc, bias, act));
  return err;
}
