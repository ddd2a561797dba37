// SPDX-License-Identifier: LGPL-2.1-or-later
/* X on its own, as floats or rounded to a 16-bit type: bytes to x/255
 * (through the same gather as the GEMM loaders) or floats copied, for GEMMs
 * that read only their element type (cuBLAS). */
#include "dtype.cuh"
#include "gemm_mainloop.cuh"

namespace
{

template <typename T>
__global__ void
convert(const pp_cuda_a a, unsigned m, unsigned k, T *__restrict__ x, unsigned ldx)
{
  const unsigned row = blockIdx.y + blockIdx.z * 65535u;
  if (row >= m)
    return;
  const long long origin = a.kind == PP_A_F32 ? 0 : pp::sample_origin(a, row);
  const bool f32_vec =
      a.kind == PP_A_F32 && a.ld % 4 == 0 && (reinterpret_cast<size_t>(a.data) & 15) == 0;
  for (unsigned col = (blockIdx.x * blockDim.x + threadIdx.x) * 4; col < k;
       col += gridDim.x * blockDim.x * 4) {
    const float4 v = pp::load_x4(a, origin, true, row, col, k, f32_vec);
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
  const unsigned blocks_x = (k + 4 * 128 - 1) / (4 * 128);
  const dim3 grid(blocks_x < 4 ? blocks_x : 4, m < 65535 ? m : 65535, (m + 65534) / 65535);
  PP_DTYPE_DISPATCH(type, T,
                    convert<T><<<grid, 128, 0, stream>>>(*a, m, k, static_cast<T *>(x), ldx));
  return cudaGetLastError();
}
