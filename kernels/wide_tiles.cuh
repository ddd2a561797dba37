// SPDX-License-Identifier: LGPL-2.1-or-later
/* The wide kernel's weight tiles and their products (mlp_wide.cu): a tile
 * of the packed blob into a shared stage, the warp's A and B fragments of
 * one k-step from ldmatrix, and the products on the tensor cores at each
 * precision (or a warpgroup's in TF32 where wgmma is there). The fragment
 * layouts (PTX ISA), g = lane / 4, t = lane % 4: mma.m16n8k16 with 16-bit
 * inputs, A's registers (row g, k 2t..), (row g+8, k 2t..), (row g, k
 * 2t+8..), (row g+8, k 2t+8..); B's (k 2t.., n g), (k 2t+8.., n g).
 * m16n8k8 .tf32: A (g, t), (g+8, t), (g, t+4), (g+8, t+4); B (k t, n g),
 * (k t+4, n g). Both are what ldmatrix gives from two 16-byte chunks of a
 * row a k-step, so one fragment loader serves both. */
#ifndef PP_WIDE_TILES_CUH
#define PP_WIDE_TILES_CUH

#include "mma16.cuh"
#include "mma_tf32.cuh"
#include "wgmma_tf32.cuh"
#include "wide_layout.cuh"

namespace pp_wide
{

/* Weight tile t of the blob into a stage, when t < count; a group is
 * committed either way, so the count of groups in flight stays the
 * pipeline's. The blob holds the tiles in the order they are used, each
 * BN rows of BK, swizzled as a stage holds them (the packer's). */
template <typename T>
__device__ __forceinline__ void
load_tile(const T *blob, unsigned t, unsigned count, T *stage)
{
  using G = GeometryOf<T>;
  if (t < count)
#pragma unroll
    for (int j = 0; j < G::COPIES; j++) {
      const unsigned c = threadIdx.x + j * G::THREADS;
      pp::cp_async16(stage + c * G::CHUNK, blob + (size_t) t * BN * G::BK + c * G::CHUNK);
    }
  asm volatile("cp.async.commit_group;" ::: "memory");
}

/* A's and B's fragments of k-step kk of a tile: A from the warp's rows of
 * the activations' panel that holds the tile's inputs (`a`: each lane's
 * ldmatrix row; its low three bits are lane % 8), B from the stage's rows
 * of the warp's columns. */
template <typename T, typename G>
__device__ __forceinline__ void
fragments(uint32_t (&af)[G::MT][4], uint32_t (&bf)[G::NT][2], const T *a, const T *stage, int kk,
          int wc, int lane)
{
  constexpr int CHUNK = G::CHUNK;
  const unsigned x = lane & 7u;
#pragma unroll
  for (int mt = 0; mt < G::MT; mt++)
    pp::ldsm_x4(af[mt], a + mt * 16 * G::BK + ((kk / CHUNK + lane / 16) ^ x) * CHUNK);
#pragma unroll
  for (int p = 0; p < G::NT / 2; p++) {
    uint32_t r[4];
    const unsigned row = wc * G::WN + p * 16 + lane % 8 + (lane / 16) * 8;
    pp::ldsm_x4(r, stage + row * G::BK + ((kk / CHUNK + (lane / 8) % 2) ^ x) * CHUNK);
    bf[2 * p][0] = r[0];
    bf[2 * p][1] = r[1];
    bf[2 * p + 1][0] = r[2];
    bf[2 * p + 1][1] = r[3];
  }
}

/* acc += one k-step's fragments multiplied: at 16 bits and in TF32
 * (PASSES = 1: activations and weights were rounded as they were stored)
 * as they are; exact FP32 (3) split into TF32 pieces, each fragment once
 * for all the products it is in. Rounding each fragment as it was read,
 * with cvt.rna.tf32.f32 (several instructions each on sm_90), made deep's
 * MLP 228 µs in TF32, four of five instructions not products. */
template <typename T, int PASSES, typename G>
__device__ __forceinline__ void
products(float (&acc)[G::MT][G::NT][4], const uint32_t (&af)[G::MT][4],
         const uint32_t (&bf)[G::NT][2])
{
  if constexpr (sizeof(T) == 2) {
#pragma unroll
    for (int mt = 0; mt < G::MT; mt++)
#pragma unroll
      for (int nt = 0; nt < G::NT; nt++)
        pp::mma16(acc[mt][nt], af[mt], bf[nt], T());
  } else if constexpr (PASSES == 1) {
#pragma unroll
    for (int mt = 0; mt < G::MT; mt++)
#pragma unroll
      for (int nt = 0; nt < G::NT; nt++)
        pp::mma_tf32(acc[mt][nt], af[mt], bf[nt]);
  } else {
    uint32_t ah[G::MT][4], al[G::MT][4], bh[G::NT][2], bl[G::NT][2];
#pragma unroll
    for (int mt = 0; mt < G::MT; mt++)
#pragma unroll
      for (int i = 0; i < 4; i++)
        pp::tf32_pieces(af[mt][i], ah[mt][i], al[mt][i]);
#pragma unroll
    for (int nt = 0; nt < G::NT; nt++)
#pragma unroll
      for (int i = 0; i < 2; i++)
        pp::tf32_pieces(bf[nt][i], bh[nt][i], bl[nt][i]);
#pragma unroll
    for (int mt = 0; mt < G::MT; mt++)
#pragma unroll
      for (int nt = 0; nt < G::NT; nt++)
        pp::mma_pieces<3>(acc[mt][nt], ah[mt], al[mt], bh[nt], bl[nt]);
  }
}

/* acc += the warp's WM × WN of A (the tile's BK inputs: the warp's rows
 * `a` of their panel) times the stage's tile; the next k-step's
 * fragments load while this one's products run. */
template <typename T, int PASSES, typename G>
__device__ __forceinline__ void
multiply(float (&acc)[G::MT][G::NT][4], const T *a, const T *stage, int wc, int lane)
{
  constexpr int STEPS = G::BK / G::KSTEP;
  uint32_t af[2][G::MT][4], bf[2][G::NT][2];
  fragments<T, G>(af[0], bf[0], a, stage, 0, wc, lane);
#pragma unroll
  for (int step = 0; step < STEPS; step++) {
    const int cur = step % 2;
    if (step + 1 < STEPS)
      fragments<T, G>(af[cur ^ 1], bf[cur ^ 1], a, stage, (step + 1) * G::KSTEP, wc, lane);
    products<T, PASSES, G>(acc, af[cur], bf[cur]);
  }
}

#if PP_WGMMA_TF32
/* The same for a warpgroup in TF32: its 64 rows (the whole panel) times
 * its 64 columns of the stage's tile, four k-steps of wgmma, issued and
 * committed (pp::wgmma_wait waits for them). a and b: the low words of
 * the panel's and of the warpgroup's rows of the stage's descriptors
 * (wgmma_tf32.cuh). */
template <typename G>
__device__ __forceinline__ void
multiply_warpgroup(float (&acc)[1][8][4], uint32_t a, uint32_t b)
{
  static_assert(G::MT == 1 && G::NT == 8 && G::BM == 64 && G::WN == 64, "a warpgroup's 64 × 64");
  pp::wgmma_pin(acc);
  pp::wgmma_fence();
#pragma unroll
  for (int step = 0; step < G::BK / 8; step++) /* 32 bytes a step: 2 in the address's units */
    pp::wgmma_m64n64k8(acc, pp::panel_descriptor(a + 2 * step), pp::panel_descriptor(b + 2 * step));
  pp::wgmma_commit();
}
#endif

} // namespace pp_wide

#endif
