// SPDX-License-Identifier: LGPL-2.1-or-later
/* X on its own, as floats or rounded to a 16-bit type: bytes to x/255
 * (through the same gather as the GEMM loaders) or floats copied, for GEMMs
 * that read only their element type (cuBLAS). */
#include <algorithm>

#include "dtype.cuh"
#include "gemm_mainloop.cuh"

namespace
{

/* A thread a group of four inputs, the groups of all rows in one range,
 * so a row of a few hundred inputs does not leave most of a block idle. */
template <typename T>
__global__ void
convert(const pp_cuda_a a, unsigned m, unsigned k, T *__restrict__ x, unsigned ldx)
{
  const unsigned groups = (k + 3) / 4;
  const bool f32_vec = pp::f32_vectors(a);
  for (size_t i = blockIdx.x * (size_t) blockDim.x + threadIdx.x; i < (size_t) m * groups;
       i += (size_t) gridDim.x * blockDim.x) {
    unsigned row, col;
    const float4 v = pp::load_group(a, i, groups, k, f32_vec, &row, &col);
    T *dst = x + (size_t) row * ldx + col;
    dst[0] = pp::from_float<T>(v.x);
    if (col + 1 < k)
      dst[1] = pp::from_float<T>(v.y);
    if (col + 2 < k)
      dst[2] = pp::from_float<T>(v.z);
    if (col + 3 < k)
      dst[3] = pp::from_float<T>(v.w);
  }
}

} // namespace

extern "C" cudaError_t
pp_cuda_convert(cudaStream_t stream, const pp_cuda_a *a, uint32_t m, uint32_t k, void *x,
                uint32_t ldx, pp_dtype type)
{
  if (!stream || !a || !x || m == 0 || k == 0 || ldx < k || (a->kind != PP_A_F32 && !a->k_offset) ||
      type >= PP_N_DTYPES)
    return cudaErrorInvalidValue;
  const size_t groups = (size_t) m * ((k + 3) / 4);
  const unsigned grid = (unsigned) std::min((groups + 255) / 256, (size_t) 65535 * 8);
  PP_DTYPE_DISPATCH(type, T,
                    convert<T><<<grid, 256, 0, stream>>>(*a, m, k, static_cast<T *>(x), ldx));
  return cudaGetLastError();
}
