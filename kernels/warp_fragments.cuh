// SPDX-License-Identifier: LGPL-2.1-or-later
/* The warp kernel's fragments (mlp_warp.cu): B's from the weights in
 * shared memory, a k-step's products at each precision, and a layer's
 * sums made the next layer's A.
 *
 * Fragment layouts (PTX ISA), g = lane / 4, t = lane % 4. mma.m16n8k16
 * with 16-bit inputs: A's registers (row g, k 2t..), (row g+8, k 2t..),
 * (row g, k 2t+8..), (row g+8, k 2t+8..); B's (k 2t.., n g), (k 2t+8..,
 * n g); C c0 (g, 2t), c1 (g, 2t+1), c2 (g+8, 2t), c3 (g+8, 2t+1). So
 * output tile nt's (c0, c1) and (c2, c3), packed, are A's registers
 * 2 (nt % 2) and 2 (nt % 2) + 1 of k-step nt / 2. mma.m16n8k8 with TF32:
 * A a0 (g, t), a1 (g+8, t), a2 (g, t+4), a3 (g+8, t+4); B (k t, n g),
 * (k t+4, n g); C as above. There a lane's two columns 2t, 2t+1 are not
 * the next k-step's t and t+4, so the products take the layer's weight
 * rows in the order sigma (column 2t is output t, 2t+1 output t+4): C then
 * holds outputs t and t+4, tile nt is the next layer's k-step nt as it
 * lies, and its weights are read in their own order. */
#ifndef PP_WARP_FRAGMENTS_CUH
#define PP_WARP_FRAGMENTS_CUH

#include <type_traits>

#include "activation.cuh"
#include "mma16.cuh"
#include "mma_tf32.cuh"
#include "warp_layout.cuh"

namespace pp_warp
{

constexpr int NT = D / 8; /* a layer's output tiles */

/* A type's steps: its 16-byte chunks and a product's inputs (16 at 16
 * bits, 8 in TF32), so D inputs are KS k-steps. */
template <typename T> struct Steps {
  static constexpr int CHUNK = 16 / sizeof(T), KSTEP = 2 * CHUNK, KS = D / KSTEP;
};

/* The weight row a B fragment's row r of an 8-column tile reads: r, or
 * in SIGMA order (floats' sums, which TF32 products take next) sigma(r),
 * so that a lane's columns 2t and 2t + 1 are outputs t and t + 4 (this
 * file's first comment). */
template <bool SIGMA>
__device__ __forceinline__ unsigned
tile_row(unsigned r)
{
  return SIGMA ? r / 2 + r % 2 * 4 : r;
}

/* B's fragments of k-step k0 for all D columns, from weights w of T (D
 * rows of stride ld, swizzled), their outputs in SIGMA order where the
 * sums are floats'. */
template <bool SIGMA, typename T>
__device__ __forceinline__ void
b_fragments(uint32_t (&bf)[NT][2], const T *w, uint32_t ld, unsigned k0, int lane)
{
  constexpr int CHUNK = Steps<T>::CHUNK;
#pragma unroll
  for (int p = 0; p < NT / 2; p++) {
    uint32_t r[4];
    const unsigned row = p * 16 + (lane / 16) * 8 + tile_row<SIGMA>(lane % 8);
    pp::ldsm_x4(r, w + row * ld + ((k0 / CHUNK + (lane / 8) % 2) ^ (row & 7u)) * CHUNK);
    bf[2 * p][0] = r[0];
    bf[2 * p][1] = r[1];
    bf[2 * p + 1][0] = r[2];
    bf[2 * p + 1][1] = r[3];
  }
}

/* acc += A·B of one k-step over the D columns: at 16 bits one m16n8k16
 * product a tile; in floats PASSES TF32 products (mma_pieces), each
 * operand split as it is read where PASSES = 3, A not where EXACT_A (a
 * byte: its low piece is zero, two products). */
template <typename T, int PASSES, bool EXACT_A = false>
__device__ __forceinline__ void
multiply(float (&acc)[NT][4], const uint32_t (&a)[4], const uint32_t (&bf)[NT][2])
{
  if constexpr (sizeof(T) == 2) {
#pragma unroll
    for (int nt = 0; nt < NT; nt++)
      pp::mma16(acc[nt], a, bf[nt], T());
  } else {
    uint32_t ah[4], al[4] = {};
#pragma unroll
    for (int i = 0; i < 4; i++)
      if (PASSES == 3 && !EXACT_A)
        pp::tf32_pieces(a[i], ah[i], al[i]);
      else
        ah[i] = a[i];
    if constexpr (PASSES == 1) {
#pragma unroll
      for (int nt = 0; nt < NT; nt++)
        pp::mma_tf32(acc[nt], ah, bf[nt]);
    } else {
      /* Four tiles at a time, each product of the four before the next
       * one's: a tile's three products add into the same sums, and one
       * after the other each would wait for the one before. */
#pragma unroll
      for (int q = 0; q < NT; q += 4) {
        uint32_t bh[4][2], bl[4][2];
#pragma unroll
        for (int j = 0; j < 4; j++)
#pragma unroll
          for (int i = 0; i < 2; i++)
            pp::tf32_pieces(bf[q + j][i], bh[j][i], bl[j][i]);
        if constexpr (!EXACT_A)
#pragma unroll
          for (int j = 0; j < 4; j++)
            pp::mma_tf32(acc[q + j], al, bh[j]);
#pragma unroll
        for (int j = 0; j < 4; j++)
          pp::mma_tf32(acc[q + j], ah, bl[j]);
#pragma unroll
        for (int j = 0; j < 4; j++)
          pp::mma_tf32(acc[q + j], ah, bh[j]);
      }
    }
  }
}

/* The output columns a lane's accumulators of tile nt hold: 2t and 2t + 1
 * at 16 bits, t and t + 4 in floats (tile_row). */
template <typename T>
__device__ __forceinline__ unsigned
lane_col(int nt, int t, int i)
{
  return sizeof(T) == 2 ? nt * 8 + 2 * t + i : nt * 8 + t + 4 * i;
}

/* Products of bytes made the products of the values the reader gives,
 * byte·scale + bias: acc·scale + bias·Σ w of each column (the sums). */
__device__ __forceinline__ void
from_bytes(float (&acc)[NT][4], float scale, float bias, const float *sums, int lane)
{
  const int t = lane % 4;
#pragma unroll
  for (int nt = 0; nt < NT; nt++)
#pragma unroll
    for (int i = 0; i < 4; i++)
      acc[nt][i] = fmaf(acc[nt][i], scale, bias * __ldg(sums + lane_col<float>(nt, t, i % 2)));
}

/* Layer l's act(acc + b), rounded as the wide kernel rounds (its
 * store_tile_as: a 16-bit type, TF32 where PASSES = 1, else kept), zero
 * past l.out, as the next layer's A fragments. */
template <typename T, int PASSES, int A>
__device__ __forceinline__ void
to_fragments(const float (&acc)[NT][4], const pp_cuda_wide_layer &l, uint32_t (&a)[Steps<T>::KS][4],
             int lane)
{
  const pp_act act = A == pp::ACT_ANY ? l.act : pp_act{ (pp_act_kind) A, l.act.slope };
  const int t = lane % 4;
  auto store = [&](auto all_in) {
    constexpr bool ALL_IN = decltype(all_in)::value;
#pragma unroll
    for (int nt = 0; nt < NT; nt++) {
      const unsigned col0 = lane_col<T>(nt, t, 0), col1 = lane_col<T>(nt, t, 1);
      const bool in0 = ALL_IN || col0 < l.out, in1 = ALL_IN || col1 < l.out;
      const float b0 = l.b && in0 ? __ldg(l.b + col0) : 0.f;
      const float b1 = l.b && in1 ? __ldg(l.b + col1) : 0.f;
#pragma unroll
      for (int half = 0; half < 2; half++) {
        const float *c = acc[nt] + 2 * half;
        const float v0 = in0 ? pp::hidden_act<T, A>(act, c[0] + b0) : 0.f;
        const float v1 = in1 ? pp::hidden_act<T, A>(act, c[1] + b1) : 0.f;
        if constexpr (sizeof(T) == 2) {
          a[nt / 2][2 * (nt % 2) + half] = pp::pack2<T>(v0, v1);
        } else {
          /* Row g (half 0) or g + 8: a0/a1 at input t, a2/a3 at t + 4. */
          a[nt][half] = PASSES == 1 ? pp::to_tf32(v0) : __float_as_uint(v0);
          a[nt][2 + half] = PASSES == 1 ? pp::to_tf32(v1) : __float_as_uint(v1);
        }
      }
    }
  };
  /* As in the wide kernel: no check a value where every column is in. */
  if (l.out >= D)
    store(std::true_type{});
  else
    store(std::false_type{});
}

/* A fragment's value r as a float, and the column of its row it holds. */
template <typename T>
__device__ __forceinline__ float
a_value(const uint32_t (&a)[4], int r, int j)
{
  if constexpr (sizeof(T) == 2) {
    T two[2];
    memcpy(two, &a[r], sizeof two);
    return pp::to_float(two[j]);
  } else {
    return __uint_as_float(a[r]);
  }
}

} // namespace pp_warp

#endif
