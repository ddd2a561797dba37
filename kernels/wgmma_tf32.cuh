// SPDX-License-Identifier: LGPL-2.1-or-later
/* TF32 products of a whole warpgroup (wgmma, sm_90a), for the wide
 * kernel's TF32 and exact FP32 (mlp_wide.cu), and FP16 ones for exact
 * FP32's first layer on bytes. mma.sync, one warp's 16 × 8 × 8 at a time,
 * held deep's MLP at 200 µs in TF32 with the tensor cores far from busy:
 * without its products the kernel took 127 of 221 µs, the same without
 * the weights' loads 194 (dev/wide-bench, docs/PERFORMANCE.md). wgmma
 * multiplies 64 rows by N columns from shared memory in one asynchronous
 * instruction, with no fragment loads in between: 172 µs.
 *
 * Both operands are read where they lie, K-major in 128-byte panels
 * swizzled 128B (wide_layout.cuh: place, and the weight tiles): eight rows
 * of 128 bytes in each 1,024, the next eight 1,024 bytes on (the stride
 * byte offset). A k-step of 8 TF32 values is 32 bytes of a panel's rows,
 * so the k-th step's descriptor is the panel's plus 32k bytes.
 *
 * The accumulator (PTX ISA, wgmma .m64nNk8 .f32): warp w of the
 * warpgroup holds rows 16w.., each n8 block j as mma.sync's C fragment,
 * d[4j + i]: (g, 8j + 2t), (g, 8j + 2t + 1), (g + 8, 8j + 2t), (g + 8,
 * 8j + 2t + 1), g = lane / 4, t = lane % 4. So a warp's float[1][8][4]
 * is what its 16 × 64 of mma.sync products would hold.
 *
 * Only where the compiler targets sm_90a (PP_WGMMA_TF32): other targets
 * keep mma.sync, and the kernel's geometry follows the same test. */
#ifndef PP_WGMMA_TF32_CUH
#define PP_WGMMA_TF32_CUH

#include <stdint.h>

#include "mma16.cuh"

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define PP_WGMMA_TF32 1
#else
#define PP_WGMMA_TF32 0
#endif

namespace pp
{

/* The descriptor of a K-major operand in 128-byte swizzled panels from p
 * (shared memory; the panel 1,024-byte aligned, p inside its first row),
 * as two words. The low: start address >> 4 in bits 0-13, leading byte
 * offset 16 >> 4 (not read for this swizzle) in 16-29; a shared address
 * stays below 256 KB, so an offset added to it (in 16-byte units) does
 * not carry out of the field. The high, the same for every panel: stride
 * byte offset 1,024 >> 4 in bits 32-45, swizzle 128B (1) in 62-63. Kept
 * apart so that each tile's and k-step's descriptor is one 32-bit add. */
__device__ __forceinline__ uint32_t
panel_descriptor_lo(const void *p)
{
  return ((smem_addr(p) & 0x3ffffu) >> 4) | 1u << 16;
}

constexpr uint32_t PANEL_DESCRIPTOR_HI = (1024 >> 4) | 1u << 30;

__device__ __forceinline__ uint64_t
panel_descriptor(uint32_t lo)
{
  return (uint64_t) PANEL_DESCRIPTOR_HI << 32 | lo;
}

#if PP_WGMMA_TF32
/* A warpgroup's m64n64 accumulator, float d[1][8][4], in a wgmma's asm:
 * its 32 registers in the template, and as operands read and written. */
#define PP_WGMMA_D                                                                                 \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, "    \
  "%20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
#define PP_WGMMA_ACC(d)                                                                            \
  "+f"(d[0][0][0]), "+f"(d[0][0][1]), "+f"(d[0][0][2]), "+f"(d[0][0][3]), "+f"(d[0][1][0]),        \
      "+f"(d[0][1][1]), "+f"(d[0][1][2]), "+f"(d[0][1][3]), "+f"(d[0][2][0]), "+f"(d[0][2][1]),    \
      "+f"(d[0][2][2]), "+f"(d[0][2][3]), "+f"(d[0][3][0]), "+f"(d[0][3][1]), "+f"(d[0][3][2]),    \
      "+f"(d[0][3][3]), "+f"(d[0][4][0]), "+f"(d[0][4][1]), "+f"(d[0][4][2]), "+f"(d[0][4][3]),    \
      "+f"(d[0][5][0]), "+f"(d[0][5][1]), "+f"(d[0][5][2]), "+f"(d[0][5][3]), "+f"(d[0][6][0]),    \
      "+f"(d[0][6][1]), "+f"(d[0][6][2]), "+f"(d[0][6][3]), "+f"(d[0][7][0]), "+f"(d[0][7][1]),    \
      "+f"(d[0][7][2]), "+f"(d[0][7][3])

/* Registers written by ordinary instructions (the accumulator, zeroed as
 * it was stored) before a wgmma reads them. */
__device__ __forceinline__ void
wgmma_fence()
{
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
}

/* Shared memory written by this thread's ordinary stores or cp.async,
 * made visible to the products' reads (the async proxy); a barrier after
 * it makes everyone's so. */
__device__ __forceinline__ void
fence_for_products()
{
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}

/* d += A (64 × 8 at a) · B (64 × 8 at b)ᵀ, TF32 in, FP32 sums. */
__device__ __forceinline__ void
wgmma_m64n64k8(float (&d)[1][8][4], uint64_t a, uint64_t b)
{
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 " PP_WGMMA_D
               "%32, %33, p, 1, 1;\n}\n"
               : PP_WGMMA_ACC(d)
               : "l"(a), "l"(b));
}

/* d += A (64 × 8, each thread's a: (g, t), (g + 8, t), (g, t + 4), (g +
 * 8, t + 4) of its warp's 16 rows, mma.sync's A fragment) · B (64 × 8 at
 * b)ᵀ, TF32 in, FP32 sums: A from registers, for operands split into
 * pieces as they are read (wide_pieces.cuh). a is read after the
 * instruction is issued, until a wait that covers it. */
__device__ __forceinline__ void
wgmma_m64n64k8_rs(float (&d)[1][8][4], const uint32_t (&a)[4], uint64_t b)
{
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 " PP_WGMMA_D
               "{%32, %33, %34, %35}, %36, p, 1, 1;\n}\n"
               : PP_WGMMA_ACC(d)
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b));
}

/* d += A (64 × 16, each thread's a: (g, 2t..2t+1), (g + 8, 2t..2t+1), (g,
 * 2t+8..2t+9), (g + 8, 2t+8..2t+9) of its warp's 16 rows, two halves a
 * register, mma.sync's A fragment) · B (64 × 16 halves at b)ᵀ, FP16 in,
 * FP32 sums: A from registers, for a frame's bytes, which FP16 holds
 * exactly (wide_bytes.cuh). a is read until a wait that covers it. */
__device__ __forceinline__ void
wgmma_m64n64k16_f16_rs(float (&d)[1][8][4], const uint32_t (&a)[4], uint64_t b)
{
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 " PP_WGMMA_D
               "{%32, %33, %34, %35}, %36, p, 1, 1, 0;\n}\n"
               : PP_WGMMA_ACC(d)
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b));
}

/* d += A (64 × 16 halves at a) · B (64 × 16 halves at b)ᵀ, FP16 in, FP32
 * sums, both K-major in 128-byte panels as the TF32 products read them:
 * a k-step of 16 values is 32 bytes of the panels' rows, as a TF32 one
 * of 8 is. */
__device__ __forceinline__ void
wgmma_m64n64k16_f16(float (&d)[1][8][4], uint64_t a, uint64_t b)
{
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 " PP_WGMMA_D
               "%32, %33, p, 1, 1, 0, 0;\n}\n"
               : PP_WGMMA_ACC(d)
               : "l"(a), "l"(b));
}

/* The accumulator's registers pinned here: the compiler sees each as read
 * and written, so none of their uses moves across the wait before it or
 * the products after it. */
__device__ __forceinline__ void
wgmma_pin(float (&d)[1][8][4])
{
#pragma unroll
  for (int j = 0; j < 8; j++)
#pragma unroll
    for (int i = 0; i < 4; i++)
      asm volatile("" : "+f"(d[0][j][i])::"memory");
}

/* The products issued since the last commit, as one group. */
__device__ __forceinline__ void
wgmma_commit()
{
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
}

/* This warpgroup's committed products but the last LEFT groups, done:
 * their reads of shared memory and writes of the accumulator (pinned
 * after). */
template <int LEFT = 0>
__device__ __forceinline__ void
wgmma_wait(float (&d)[1][8][4])
{
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(LEFT) : "memory");
  wgmma_pin(d);
}

#endif

} // namespace pp

#endif
