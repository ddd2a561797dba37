// SPDX-License-Identifier: LGPL-2.1-or-later
/* The wide kernel's hidden layers (mlp_wide.cu), two ways: by warps on
 * mma.sync with the weight tiles through cp.async and a barrier a tile,
 * and in TF32 on sm_90a by warpgroups with the tiles through a ring of
 * mbarriers that the copy engine fills. Both leave the last hidden
 * layer's activations in the buffer Net::src names, every warp past its
 * last barrier. */
#ifndef PP_WIDE_LAYERS_CUH
#define PP_WIDE_LAYERS_CUH

#include "frame_rows.cuh"
#include "tile_ring.cuh"
#include "wide_bytes.cuh"
#include "wide_epilogue.cuh"
#include "wide_tiles.cuh"

namespace pp_wide
{

/* The block's activations, in two buffers (Net::src says which holds a
 * layer's input), and its weight stages, in shared memory. */
template <typename T, typename G, int STAGES> struct Smem {
  T *base;
  const Net &net;
  /* Buffer b and its stride, chosen without indexing (no local memory). */
  __device__ T *buf(unsigned b) const
  {
    return b ? base + G::BM * net.ld[0] : base;
  }
  __device__ uint32_t ld(unsigned b) const
  {
    return b ? net.ld[1] : net.ld[0];
  }
  __device__ T *stage(unsigned s) const
  {
    return base + G::BM * (net.ld[0] + net.ld[1]) + s * BN * G::BK;
  }
};

/* The hidden layers by warps (mma.sync): tile t is multiplied from stage
 * s while tiles t+1 .. t+STAGES-1 are in flight (cp.async), the block
 * meeting at a barrier each tile. Layers take turns in the buffers (no
 * plan where one writes over its input comes here). */
template <typename T, int PASSES, int STAGES, typename G>
__device__ __forceinline__ void
layers_by_warps(const pp_cuda_a &x, unsigned m, unsigned k, const Net &net,
                const Smem<T, G, STAGES> &sm)
{
  constexpr int BM = G::BM, BK = G::BK;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int wr = warp / (BN / G::WN), wc = warp % (BN / G::WN);
  const T *const blob = static_cast<const T *>(net.layer[0].w);
  constexpr bool TF32 = sizeof(T) == 4 && PASSES == 1;
  float acc[G::MT][G::NT][4] = {};
  unsigned t = 0, s = 0;
#pragma unroll
  for (int i = 0; i < STAGES - 1; i++)
    load_tile(blob, i, net.tiles, sm.stage(i));
  load_rows<BM, G::THREADS, TF32, true>(x, m, k, blockIdx.x * BM, sm.buf(net.src[0]),
                                        sm.ld(net.src[0]));
  for (unsigned li = 0; li + 1 < net.n; li++) {
    const pp_cuda_wide_layer &l = net.layer[li];
    const uint32_t kp = pad64(l.in), np = pad64(l.out);
    /* This warp's rows of the layer's input in its first panel, at its
     * lane's ldmatrix row; a tile's BK inputs are one panel. */
    const T *a = sm.buf(net.src[li]) + (wr * G::WM + lane % 16) * BK;
    for (unsigned n0 = 0; n0 < np; n0 += BN) {
      /* A warp whose columns lie past the layer's padded width idles. */
      const bool active = n0 + wc * G::WN < np;
      for (unsigned k0 = 0; k0 < kp; k0 += BK, t++) {
        asm volatile("cp.async.wait_group %0;" ::"n"(STAGES - 2) : "memory");
        __syncthreads(); /* tile t has landed; every warp is done with the stage it replaces */
        const unsigned into = s == 0 ? STAGES - 1 : s - 1;
        load_tile(blob, t + STAGES - 1, net.tiles, sm.stage(into));
        if (active)
          multiply<T, PASSES, G>(acc, a + (size_t) (k0 / BK) * (BM * BK), sm.stage(s), wc, lane);
        s = s + 1 == STAGES ? 0 : s + 1;
      }
      if (active)
        pp::with_act(l.act.kind, [&](auto kind) {
          store_tile_as<T, decltype(kind)::value, TF32, G>(acc, l, n0, sm.buf(net.src[li + 1]), wr,
                                                           wc, lane);
        });
    }
  }
  asm volatile("cp.async.wait_group 0;" ::: "memory");
  __syncthreads();
}

#if PP_WGMMA_TF32
/* The hidden layers in TF32 by two warpgroups (wgmma), the weight tiles
 * through a ring (tile_ring.cuh) that thread 0 refills: tile t's products
 * are waited for only once tile t+1's are issued, so the tensor cores go
 * on from one tile to the next while the warps wait for the next tile to
 * land, and a stage goes back to the copy engine as soon as both
 * warpgroups are done with it. A warpgroup with no columns in a column
 * tile (a layer 64 wide) only releases its stages. A layer whose output
 * replaces its input (Net::src, in_place; OVER: the kernel takes such
 * plans) keeps its column tiles' results in registers and stores them
 * once every product of the layer is done. A first layer on bytes whose
 * values FP16 holds is multiplied in FP16 (wide_bytes.cuh), 64 inputs a
 * tile: the frame's values stored as FP16 (rounded to its 11 bits, ties
 * to even where TF32's rounding takes them away from zero), the weights
 * rounded to TF32 and scaled a column at a time. */
template <int STAGES, bool OVER, typename G>
__device__ __forceinline__ void
layers_on_ring(const pp_cuda_a &x, unsigned m, unsigned k, const Net &net,
               const Smem<float, G, STAGES> &sm)
{
  constexpr int BM = G::BM, BK = G::BK;
  /* In 16-byte units, added to the descriptors' low words. */
  constexpr uint32_t PANEL = BM * BK * 4 / 16, STAGE = BN * BK * 4 / 16, TILE = BN * BK * 4;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  /* The warpgroup from lane 0, which tells the compiler it is the same
   * across the warp: the descriptors built from it stay in uniform
   * registers, not moved there before each product. */
  const int wr = warp % 4, wc = __shfl_sync(0xffffffffu, warp / 4, 0);
  uint64_t *const full = reinterpret_cast<uint64_t *>(sm.stage(STAGES)), *const empty =
                                                                             full + STAGES;
  const bool halves_first =
      (x.kind == PP_A_U8_VEC4 || x.kind == PP_A_U8_GATHER) && values_in_fp16(x);
  const BytesLayer byte_layer = halves_first ? bytes_layer(net, 1) : BytesLayer{};
  const unsigned tiles = byte_layer.ring_parts(net);
  auto fill = [&](unsigned st, unsigned v) {
    pp::bulk_fill(sm.stage(st), byte_layer.ring_part(net, v), TILE, &full[st]);
  };
  if (threadIdx.x == 0) {
    for (int i = 0; i < STAGES; i++) {
      pp::mbar_init(&full[i], 1);
      pp::mbar_init(&empty[i], G::WARPS);
    }
    pp::mbar_init_fence();
    for (unsigned i = 0; i < STAGES && i < tiles; i++)
      fill(i, i);
  }
  /* Tile u's stage su back to the ring (its fill's parity pu); thread 0
   * refills it with tile u + STAGES once every warp has let it go. */
  auto release = [&](unsigned u, unsigned su, unsigned pu) {
    __syncwarp();
    if (lane == 0)
      pp::mbar_arrive(&empty[su]);
    if (threadIdx.x == 0 && u + STAGES < tiles) {
      pp::mbar_wait(&empty[su], pu);
      fill(su, u + STAGES);
    }
  };
  if (halves_first)
    load_rows<BM, G::THREADS, false, true>(x, m, k, blockIdx.x * BM,
                                           reinterpret_cast<__half *>(sm.buf(net.src[0])),
                                           sm.ld(net.src[0]));
  else
    load_rows<BM, G::THREADS, true, true>(x, m, k, blockIdx.x * BM, sm.buf(net.src[0]),
                                          sm.ld(net.src[0]));
  pp::fence_for_products(); /* the activations stored, to the products' reads */
  __syncthreads();
  float acc[1][8][4] = {}, first[1][8][4] = {}, fin[1][8][4] = {};
  /* Tile t lies in stage s, filled in the ring's pass of parity phase;
   * ps and pph the same of tile t - 1. Counted, not divided from t. */
  unsigned t = 0, s = 0, phase = 0, ps = 0, pph = 0;
  auto next = [&]() {
    ps = s;
    pph = phase;
    t++;
    if (++s == STAGES) {
      s = 0;
      phase ^= 1;
    }
  };
  for (unsigned li = 0; li + 1 < net.n; li++) {
    const pp_cuda_wide_layer &l = net.layer[li];
    const uint32_t kp = pad64(l.in), np = pad64(l.out);
    float *const out = sm.buf(net.src[li + 1]);
    const bool over = OVER && net.src[li + 1] == net.src[li];
    /* The layer's first panel, and this warpgroup's rows of stage 0. */
    const uint32_t a_desc = pp::panel_descriptor_lo(sm.buf(net.src[li]));
    const uint32_t b_desc = pp::panel_descriptor_lo(sm.stage(0) + wc * G::WN * BK);
    const bool in_halves = li == 0 && halves_first;
    /* A tile's products, each waited for only once the next tile's are
     * issued; a panel of A holds 64 inputs in FP16, 32 in TF32. */
    auto products = [&](auto fp16) {
      constexpr bool FP16 = decltype(fp16)::value;
      constexpr unsigned STEP = FP16 ? 2 * BK : BK;
      for (unsigned k0 = 0; k0 < kp; k0 += STEP) {
        pp::mbar_wait(&full[s], phase);
        if constexpr (FP16)
          multiply_fp16(acc, a_desc + k0 / STEP * PANEL, b_desc + s * STAGE);
        else
          multiply_warpgroup<G>(acc, a_desc + k0 / STEP * PANEL, b_desc + s * STAGE);
        pp::wgmma_wait<1>(acc);
        if (k0)
          release(t - 1, ps, pph);
        next();
      }
      pp::wgmma_wait<0>(acc);
      release(t - 1, ps, pph);
    };
    for (unsigned n0 = 0; n0 < np; n0 += BN) {
      const bool active = n0 + wc * G::WN < np, last = n0 + BN >= np;
      if (active) {
        if (in_halves) {
          products(std::true_type{});
          from_bytes<G>(acc, 1.f, 0.f, byte_layer, n0, wc, lane); /* the columns' scales */
        } else
          products(std::false_type{});
        finish_column_tile<true, G>(acc, l, n0, out, over, last, first, fin, wr, wc, lane);
      } else
        for (unsigned k0 = 0; k0 < kp; k0 += in_halves ? 2 * BK : BK) {
          pp::mbar_wait(&full[s], phase);
          release(t, s, phase);
          next();
        }
      if (over && last)
        put_kept<true, G>(first, fin, n0, active, out, wr, wc, lane);
    }
    pp::fence_for_products(); /* the layer's activations, to the next one's products */
    __syncthreads();
  }
}
#endif

} // namespace pp_wide

#endif
