// SPDX-License-Identifier: LGPL-2.1-or-later
/* A kernel that only waits: queued before a region timed with events, it
 * keeps the GPU busy while the CPU enqueues the region, so the events time
 * the GPU's work and not the gaps between launches. */
#include "cuda_kernels.h"

namespace
{

__global__ void
spin(unsigned long long ns)
{
  unsigned long long start, now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now - start < ns);
}

} // namespace

extern "C" cudaError_t
pp_cuda_spin(cudaStream_t stream, uint32_t microseconds)
{
  if (!stream)
    return cudaErrorInvalidValue;
  spin<<<1, 1, 0, stream>>>(microseconds * 1000ull);
  return cudaGetLastError();
}
