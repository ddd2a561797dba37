// SPDX-License-Identifier: LGPL-2.1-or-later
/* The wide kernel's hidden layers in exact FP32 on sm_90a (mlp_wide.cu):
 * three TF32 products of pieces a k-step, lo·hi, hi·lo and hi·hi, each a
 * warpgroup's wgmma. wgmma reads an operand in shared memory as it lies,
 * so the weights come split: the packer stores each tile's high and low
 * pieces (wide_layout.cuh, PIECE_PARTS), and the activations, which no
 * room is left to store twice (deep's fill 176 KB), are split as each
 * warp reads them into registers, the form of A that wgmma also takes.
 * A frame's bytes need no split: the first layer multiplies them as they
 * are, in FP16 against FP16 pieces of the weights (wide_bytes.cuh).
 *
 * The ring is layers_on_ring's (wide_layers.cuh), with one difference: a
 * stage holds one warpgroup's part of a tile, 64 columns' two pieces, so
 * the warpgroups take alternate stages, and each releases and refills
 * (its first thread) only the stages it read. With an odd count of stages
 * a stage's next part is the other warpgroup's, so a warpgroup waits for
 * every other fill of a stage, and a parity would not tell its fill from
 * the other's before it (one that has not landed yet reads as its own
 * landed): each stage has a `full` barrier for each warpgroup, whose
 * fills it sees all of, in order. */
#ifndef PP_WIDE_PIECES_CUH
#define PP_WIDE_PIECES_CUH

#include "wide_bytes.cuh"
#include "wide_layers.cuh"

namespace pp_wide
{

#if PP_WGMMA_TF32
/* A k-tile's A pieces for this thread: its rows g and g + 8 of the warp's
 * 16 (wr), the 8 inputs the packer's order (piece_k) gives lane t, two
 * 16-byte chunks a row of the panel `p`; hi[j], lo[j] the k-step j
 * fragments (wgmma_m64n64k8_rs's a). */
__device__ __forceinline__ void
a_pieces(uint32_t (&hi)[4][4], uint32_t (&lo)[4][4], const float *p, int wr, int lane)
{
  const unsigned g = lane / 4, t = lane % 4, row = wr * 16 + g;
  uint4 v[2][2]; /* [row g, g + 8][chunk] */
#pragma unroll
  for (int h = 0; h < 2; h++)
#pragma unroll
    for (int c = 0; c < 2; c++)
      v[h][c] = *reinterpret_cast<const uint4 *>(p + (row + 8 * h) * 32 + ((2 * t + c) ^ g) * 4);
#pragma unroll
  for (int j = 0; j < 4; j++) {
    /* Inputs 2j (t's) and 2j + 1 (t + 4's) of the eight: words 2 (j % 2)
     * and 2 (j % 2) + 1 of chunk j / 2. */
    const uint32_t w[4] = {
      j < 2 ? (j ? v[0][0].z : v[0][0].x) : (j == 3 ? v[0][1].z : v[0][1].x),
      j < 2 ? (j ? v[1][0].z : v[1][0].x) : (j == 3 ? v[1][1].z : v[1][1].x),
      j < 2 ? (j ? v[0][0].w : v[0][0].y) : (j == 3 ? v[0][1].w : v[0][1].y),
      j < 2 ? (j ? v[1][0].w : v[1][0].y) : (j == 3 ? v[1][1].w : v[1][1].y),
    };
#pragma unroll
    for (int i = 0; i < 4; i++)
      pp::tf32_pieces(w[i], hi[j][i], lo[j][i]);
  }
}

/* A k-tile's A fragments held in their registers up to here. */
template <int STEPS>
__device__ __forceinline__ void
pin(uint32_t (&a)[STEPS][4])
{
#pragma unroll
  for (int j = 0; j < STEPS; j++)
#pragma unroll
    for (int i = 0; i < 4; i++)
      asm volatile("" : "+r"(a[j][i])::"memory");
}

/* acc += a k-tile: a warpgroup's 64 rows (hi, lo) times its 64 columns'
 * pieces in a stage (b: the descriptor's low word of their high pieces;
 * the low ones lie a half tile on), four k-steps of three products,
 * issued and committed. */
__device__ __forceinline__ void
multiply_pieces(float (&acc)[1][8][4], const uint32_t (&hi)[4][4], const uint32_t (&lo)[4][4],
                uint32_t b)
{
  constexpr uint32_t LO = BN / 2 * TILE_ROW_BYTES / 16;
  pp::wgmma_pin(acc);
  pp::wgmma_fence();
#pragma unroll
  for (int j = 0; j < 4; j++) { /* 32 bytes a step: 2 in the address's units */
    pp::wgmma_m64n64k8_rs(acc, lo[j], pp::panel_descriptor(b + 2 * j));
    pp::wgmma_m64n64k8_rs(acc, hi[j], pp::panel_descriptor(b + LO + 2 * j));
    pp::wgmma_m64n64k8_rs(acc, hi[j], pp::panel_descriptor(b + 2 * j));
  }
  pp::wgmma_commit();
}

/* The hidden layers in exact FP32 by two warpgroups, as layers_on_ring
 * runs them in TF32 (its OVER and the layers written over their inputs
 * the same), each warpgroup's parts through the ring as the file's
 * comment says. Each k-tile's products are done before the next k-tile's
 * pieces are read into the same registers, and its part released then;
 * the other warpgroup's products keep the tensor cores busy meanwhile.
 * Reading the next k-tile's pieces into a second set of registers while
 * this one's products ran, releasing each part only once the next one's
 * were issued as layers_on_ring does, was slower (deep's MLP 305 µs
 * against 213, both with one `full` barrier a stage); releasing it as
 * here, no faster (225 against 225): the products, not the reads, hold
 * the loop (docs/PERFORMANCE.md, What exact FP32 on warpgroups changes). */
template <int STAGES, bool OVER, typename G>
__device__ __forceinline__ void
layers_in_pieces(const pp_cuda_a &x, unsigned m, unsigned k, const Net &net,
                 const Smem<float, G, STAGES> &sm)
{
  constexpr int BM = G::BM, BK = G::BK;
  constexpr uint32_t STAGE = BN * BK * 4 / 16, PART = BN * BK * 4;
  static_assert(STAGES >= 2 && BM == 64 && BK == 32 && G::WN == BN / 2, "parts of 64 columns");
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int wr = warp % 4, wc = __shfl_sync(0xffffffffu, warp / 4, 0);
  /* full[w * STAGES + s]: warpgroup w's part in stage s has landed (part
   * u is warpgroup u % 2's); empty[s]: the stage's part is let go. */
  uint64_t *const full = reinterpret_cast<uint64_t *>(sm.stage(STAGES)), *const empty =
                                                                             full + 2 * STAGES;
  static_assert(3 * sizeof(uint64_t) <= STAGE_BARRIER_BYTES, "a stage's barriers");
  const bool bytes = x.kind == PP_A_U8_VEC4 || x.kind == PP_A_U8_GATHER;
  const BytesLayer byte_layer = bytes ? bytes_layer(net, PIECE_PARTS) : BytesLayer{};
  const unsigned parts = byte_layer.ring_parts(net);
  auto fill = [&](unsigned st, unsigned v) {
    pp::bulk_fill(sm.stage(st), byte_layer.ring_part(net, v), PART, &full[v % 2 * STAGES + st]);
  };
  if (threadIdx.x == 0) {
    for (int i = 0; i < STAGES; i++) {
      pp::mbar_init(&full[i], 1);
      pp::mbar_init(&full[STAGES + i], 1);
      pp::mbar_init(&empty[i], G::WARPS / 2);
    }
    pp::mbar_init_fence();
    for (unsigned i = 0; i < STAGES && i < parts; i++)
      fill(i, i);
  }
  /* This warpgroup's part u lies in stage s, the ring's pass of parity
   * phase; bit s of mine: the parity of the warpgroup's next fill of
   * stage s. */
  unsigned u = wc, s = wc, phase = 0, mine = 0;
  auto wait_full = [&]() {
    pp::mbar_wait(&full[wc * STAGES + s], mine >> s & 1u);
    mine ^= 1u << s;
  };
  /* The part back to the ring, and on to the warpgroup's next: its first
   * thread refills the stage with part u + STAGES once the warpgroup's
   * warps have let it go. */
  auto release_next = [&]() {
    __syncwarp();
    if (lane == 0)
      pp::mbar_arrive(&empty[s]);
    if (threadIdx.x % 128 == 0 && u + STAGES < parts) {
      pp::mbar_wait(&empty[s], phase);
      fill(s, u + STAGES);
    }
    u += 2;
    if ((s += 2) >= STAGES) {
      s -= STAGES;
      phase ^= 1;
    }
  };
  pp_cuda_a raw = x; /* bytes as they are: the reader's scale and bias come after */
  if (bytes) {
    raw.scale = 1.f;
    raw.bias = 0.f;
  }
  load_rows<BM, G::THREADS, false, true>(raw, m, k, blockIdx.x * BM, sm.buf(net.src[0]),
                                         sm.ld(net.src[0]));
  pp::fence_for_products(); /* the activations stored, to the products' reads */
  __syncthreads();
  float acc[1][8][4] = {}, first[1][8][4] = {}, fin[1][8][4] = {};
  uint32_t hi[4][4], lo[4][4], halves[4][4];
  for (unsigned li = 0; li + 1 < net.n; li++) {
    const pp_cuda_wide_layer &l = net.layer[li];
    const uint32_t kp = pad64(l.in), np = pad64(l.out);
    const float *const in = sm.buf(net.src[li]);
    float *const out = sm.buf(net.src[li + 1]);
    const bool over = OVER && net.src[li + 1] == net.src[li];
    const uint32_t b_desc = pp::panel_descriptor_lo(sm.stage(0));
    const bool on_bytes = li == 0 && bytes;
    const unsigned k_parts = kp / (on_bytes ? 2 * BK : BK); /* the ring's parts a column tile */
    for (unsigned n0 = 0; n0 < np; n0 += BN) {
      const bool active = n0 + wc * G::WN < np, last = n0 + BN >= np;
      if (active) {
        if (on_bytes) {
          for (unsigned kt = 0; kt < k_parts; kt++) {
            a_halves<BM>(halves, in + (size_t) kt * (2 * BM * BK), wr, lane);
            wait_full();
            multiply_halves(acc, halves, b_desc + s * STAGE);
            pp::wgmma_wait<0>(acc);
            pin(halves);
            release_next();
          }
          from_bytes<G>(acc, x.scale, x.bias, byte_layer, n0, wc, lane);
        } else
          for (unsigned kt = 0; kt < k_parts; kt++) {
            a_pieces(hi, lo, in + (size_t) kt * (BM * BK), wr, lane);
            wait_full();
            multiply_pieces(acc, hi, lo, b_desc + s * STAGE);
            pp::wgmma_wait<0>(acc);
            pin(hi); /* no value takes their registers while the products read them */
            pin(lo);
            release_next();
          }
        finish_column_tile<false, G>(acc, l, n0, out, over, last, first, fin, wr, wc, lane);
      } else
        for (unsigned kt = 0; kt < k_parts; kt++) {
          wait_full();
          release_next();
        }
      if (over && last)
        put_kept<false, G>(first, fin, n0, active, out, wr, wc, lane);
    }
    pp::fence_for_products(); /* the layer's activations, to the next one's products */
    __syncthreads();
  }
}
#endif

} // namespace pp_wide

#endif
