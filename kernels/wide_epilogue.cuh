// SPDX-License-Identifier: LGPL-2.1-or-later
/* The wide kernel's column tile finished (mlp_wide.cu): each sum's bias
 * and activation, and the values stored into the next layer's
 * activations or kept in registers until they may be. The accumulator is
 * mma.sync's C fragment (wgmma's too, wgmma_tf32.cuh), g = lane / 4, t =
 * lane % 4: c0 (g, 2t), c1 (g, 2t+1), c2 (g+8, 2t), c3 (g+8, 2t+1). */
#ifndef PP_WIDE_EPILOGUE_CUH
#define PP_WIDE_EPILOGUE_CUH

#include <type_traits>

#include "activation.cuh"
#include "frame_rows.cuh"
#include "wide_layout.cuh"

namespace pp_wide
{

/* Columns nt * 8.. of the warp's tile of layer l's output, columns n0..:
 * act(acc + b) and where it goes, put(mt, nt, half, row, col, v0, v1) for
 * each pair of neighbours, zero past l.out (the next layer's padding)
 * unless ALL_IN says none lies there. At 16 bits acc + b is rounded
 * before the activation too, as the per-layer path stores its GEMM's
 * output before its activation kernel (and the CPU backend rounds alike),
 * so a model's scores do not depend on the path the planner took. */
template <typename T, int A, bool ALL_IN, typename G, typename Put>
__device__ __forceinline__ void
finish_block(float (&acc)[G::MT][G::NT][4], const pp_cuda_wide_layer &l, unsigned n0, int nt,
             int wr, int wc, int lane, Put put)
{
  /* A known kind folds pp_act_apply's switch away. */
  const pp_act act = A == pp::ACT_ANY ? l.act : pp_act{ (pp_act_kind) A, l.act.slope };
  const int g = lane / 4, t = lane % 4;
  const unsigned col = n0 + wc * G::WN + nt * 8 + 2 * t;
  const bool in0 = ALL_IN || col < l.out, in1 = ALL_IN || col + 1 < l.out;
  const float b0 = l.b && in0 ? __ldg(l.b + col) : 0.f;
  const float b1 = l.b && in1 ? __ldg(l.b + col + 1) : 0.f;
#pragma unroll
  for (int mt = 0; mt < G::MT; mt++)
#pragma unroll
    for (int half = 0; half < 2; half++) {
      float *c = acc[mt][nt] + 2 * half;
      const unsigned row = wr * G::WM + mt * 16 + g + 8 * half;
      const float v0 = in0 ? pp::hidden_act<T, A>(act, c[0] + b0) : 0.f;
      const float v1 = in1 ? pp::hidden_act<T, A>(act, c[1] + b1) : 0.f;
      put(mt, nt, half, row, col, v0, v1);
    }
}

/* The warp's whole tile of layer l's output, columns n0..: finish_block
 * for each block of eight columns. A warp whose columns all lie in the
 * layer checks none: with a branch around each value's activation, each
 * waited for the one before (deep's MLP 131 µs); without, the compiler
 * interleaves them (119). The same loop written inside a generic lambda
 * made exact FP32's deep 5% slower (dev/wide-bench, 346 against 329 µs). */
template <typename T, int A, typename G, typename Put>
__device__ __forceinline__ void
finish_tile(float (&acc)[G::MT][G::NT][4], const pp_cuda_wide_layer &l, unsigned n0, int wr, int wc,
            int lane, Put put)
{
  if (n0 + (wc + 1) * G::WN <= l.out) {
#pragma unroll
    for (int nt = 0; nt < G::NT; nt++)
      finish_block<T, A, true, G>(acc, l, n0, nt, wr, wc, lane, put);
  } else {
#pragma unroll
    for (int nt = 0; nt < G::NT; nt++)
      finish_block<T, A, false, G>(acc, l, n0, nt, wr, wc, lane, put);
  }
}

/* acc's values zeroed. */
template <int MT, int NT>
__device__ __forceinline__ void
zero(float (&acc)[MT][NT][4])
{
#pragma unroll
  for (int mt = 0; mt < MT; mt++)
#pragma unroll
    for (int nt = 0; nt < NT; nt++)
#pragma unroll
      for (int i = 0; i < 4; i++)
        acc[mt][nt][i] = 0.f;
}

/* The same, stored into the activations `h`, rounded to T (floats: to
 * TF32 where TF32, else kept); acc zeroed. */
template <typename T, int A, bool TF32, typename G>
__device__ __forceinline__ void
store_tile_as(float (&acc)[G::MT][G::NT][4], const pp_cuda_wide_layer &l, unsigned n0, T *h, int wr,
              int wc, int lane)
{
  finish_tile<T, A, G>(acc, l, n0, wr, wc, lane,
                       [&](int, int, int, unsigned row, unsigned col, float v0, float v1) {
                         put2<TF32>(h + place<T, true, G::BM>(row, col, 0), v0, v1);
                       });
  zero(acc);
}

/* Values that finish_tile gave, columns n0.. of the warp's tile, into
 * the activations `h` as store_tile_as stores them. */
template <typename T, bool TF32, typename G>
__device__ __forceinline__ void
put_tile(const float (&v)[G::MT][G::NT][4], unsigned n0, T *h, int wr, int wc, int lane)
{
  const int g = lane / 4, t = lane % 4;
#pragma unroll
  for (int nt = 0; nt < G::NT; nt++)
#pragma unroll
    for (int mt = 0; mt < G::MT; mt++)
#pragma unroll
      for (int half = 0; half < 2; half++) {
        const unsigned row = wr * G::WM + mt * 16 + g + 8 * half;
        const unsigned col = n0 + wc * G::WN + nt * 8 + 2 * t;
        put2<TF32>(h + place<T, true, G::BM>(row, col, 0), v[mt][nt][2 * half],
                   v[mt][nt][2 * half + 1]);
      }
}

/* A warpgroup's column tile of layer l finished (its sums in acc, mma.sync's
 * layout; wgmma_tf32.cuh): stored into `out` as store_tile_as stores, or
 * where the layer writes over its input (`over`) kept in registers until
 * every product of the layer is done, the layer's last column tile in
 * fin, the one before in first (at most two: in_place); acc zeroed. */
template <bool TF32, typename G>
__device__ __forceinline__ void
finish_column_tile(float (&acc)[1][8][4], const pp_cuda_wide_layer &l, unsigned n0, float *out,
                   bool over, bool last, float (&first)[1][8][4], float (&fin)[1][8][4], int wr,
                   int wc, int lane)
{
  pp::with_act(l.act.kind, [&](auto kind) {
    constexpr int A = decltype(kind)::value;
    if (!over)
      store_tile_as<float, A, TF32, G>(acc, l, n0, out, wr, wc, lane);
    else {
      auto keep = [&](float(&v)[1][8][4]) {
        finish_tile<float, A, G>(
            acc, l, n0, wr, wc, lane,
            [&](int mt, int nt, int half, unsigned, unsigned, float v0, float v1) {
              v[mt][nt][2 * half] = v0;
              v[mt][nt][2 * half + 1] = v1;
            });
      };
      if (last)
        keep(fin);
      else
        keep(first);
      zero(acc);
    }
  });
}

/* A layer written over its input, after its last column tile: once every
 * product of the layer has read the input (the block meets), the kept
 * tiles stored, first's the column tile before n0's, fin's n0's where the
 * warpgroup has columns there (active). */
template <bool TF32, typename G>
__device__ __forceinline__ void
put_kept(const float (&first)[1][8][4], const float (&fin)[1][8][4], unsigned n0, bool active,
         float *out, int wr, int wc, int lane)
{
  __syncthreads();
  if (n0 > 0)
    put_tile<float, TF32, G>(first, n0 - BN, out, wr, wc, lane);
  if (active)
    put_tile<float, TF32, G>(fin, n0, out, wr, wc, lane);
}

} // namespace pp_wide

#endif
