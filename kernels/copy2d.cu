// SPDX-License-Identifier: LGPL-2.1-or-later
/* A pitched copy inside device memory as a kernel: a frame's plane from
 * upstream's CUDA memory into the slot's frame. cudaMemcpy2DAsync does the
 * same on a copy engine, far below memory bandwidth for rows as short as
 * a frame's (docs/PERFORMANCE.md); SMs copy at memory bandwidth. */
#include "cuda_kernels.h"

namespace
{

template <typename T>
__global__ void
copy_rows(uint8_t *__restrict__ dst, size_t dpitch, const uint8_t *__restrict__ src, size_t spitch,
          unsigned row_units, unsigned rows)
{
  for (unsigned row = blockIdx.y; row < rows; row += gridDim.y) {
    const T *s = reinterpret_cast<const T *>(src + row * spitch);
    T *d = reinterpret_cast<T *>(dst + row * dpitch);
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < row_units;
         i += gridDim.x * blockDim.x)
      d[i] = __ldg(s + i);
  }
}

} // namespace

extern "C" cudaError_t
pp_cuda_copy_2d(cudaStream_t stream, void *dst, size_t dpitch, const void *src, size_t spitch,
                size_t row_bytes, size_t rows)
{
  if (!stream || !dst || !src || dpitch < row_bytes || spitch < row_bytes || rows > 0x7fffffffu)
    return cudaErrorInvalidValue;
  if (row_bytes == 0 || rows == 0)
    return cudaSuccess;
  const bool wide = ((reinterpret_cast<size_t>(dst) | reinterpret_cast<size_t>(src) | dpitch |
                      spitch | row_bytes) &
                     15) == 0;
  const unsigned units = (unsigned) (wide ? row_bytes / 16 : row_bytes);
  const unsigned threads = 128;
  const dim3 grid((units + threads - 1) / threads, rows < 65535 ? (unsigned) rows : 65535);
  if (wide)
    copy_rows<uint4><<<grid, threads, 0, stream>>>(static_cast<uint8_t *>(dst), dpitch,
                                                   static_cast<const uint8_t *>(src), spitch, units,
                                                   (unsigned) rows);
  else
    copy_rows<uint8_t><<<grid, threads, 0, stream>>>(static_cast<uint8_t *>(dst), dpitch,
                                                     static_cast<const uint8_t *>(src), spitch,
                                                     units, (unsigned) rows);
  return cudaGetLastError();
}
