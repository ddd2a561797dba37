// SPDX-License-Identifier: LGPL-2.1-or-later
/* A ring of shared stages that the copy engine fills (cp.async.bulk, one
 * instruction a tile from one thread) and the warps release, each stage
 * with two mbarriers: `full` completes when the tile's bytes have landed,
 * `empty` when every warp that reads it is done. Threads wait on the
 * barrier they need instead of the whole block meeting at __syncthreads
 * twice a tile, so a tile's products may still run while the next tile is
 * waited for (sm_90). The tile must lie in global memory as it is to lie
 * in shared memory: the packer swizzles the weight tiles. */
#ifndef PP_TILE_RING_CUH
#define PP_TILE_RING_CUH

#include <stdint.h>

#include "mma16.cuh"

namespace pp
{

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900

__device__ __forceinline__ void
mbar_init(uint64_t *bar, unsigned count)
{
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_addr(bar)), "r"(count)
               : "memory");
}

/* Initialized barriers visible to the async proxy (the copy engine) too;
 * a __syncthreads after makes them every thread's. */
__device__ __forceinline__ void
mbar_init_fence()
{
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}

__device__ __forceinline__ void
mbar_arrive(uint64_t *bar)
{
  asm volatile(
      "{\n.reg .b64 state;\nmbarrier.arrive.shared::cta.b64 state, [%0];\n}" ::"r"(smem_addr(bar))
      : "memory");
}

/* Until the barrier's phase of this parity has completed. */
__device__ __forceinline__ void
mbar_wait(uint64_t *bar, unsigned parity)
{
  asm volatile("{\n.reg .pred done;\n"
               "wait_%=:\n"
               "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
               "@!done bra wait_%=;\n}" ::"r"(smem_addr(bar)),
               "r"(parity)
               : "memory");
}

/* `bytes` from global `src` into shared `dst` by the copy engine, counted
 * on `full` (which this thread arrives on, expecting them). Both 16-byte
 * aligned, bytes a multiple of 16. */
__device__ __forceinline__ void
bulk_fill(void *dst, const void *src, unsigned bytes, uint64_t *full)
{
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_addr(full)),
               "r"(bytes)
               : "memory");
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, "
               "[%3];" ::"r"(smem_addr(dst)),
               "l"(src), "r"(bytes), "r"(smem_addr(full))
               : "memory");
}

#endif

} // namespace pp

#endif
