// SPDX-License-Identifier: LGPL-2.1-or-later
/* The wide kernel: an MLP of 2 to 8 layers whose hidden layers are up to
 * 512 wide and whose output is one value, in one launch, at a 16-bit
 * precision or in floats (TF32, or exact FP32 in TF32 pieces). A block
 * owns BM rows and keeps all their activations in shared memory, in two
 * buffers that take turns layer by layer, so no activation touches device
 * memory. Each hidden layer is a GEMM of those activations and the
 * layer's weights, which stream from the packed blob through shared
 * memory in BN × BK tiles, the next one or two in flight (cp.async) while
 * this one is multiplied on the tensor cores (mma.sync, or wgmma for TF32
 * on sm_90a; FP32 sums: wide_tiles.cuh). The tiles run on across column
 * tiles and layers without a pause, weights not depending on activations,
 * and lie in the blob in the order they are used, so a tile's address is
 * its number. The bias and activation are added in FP32 and the result
 * rounded to the 16-bit type as it is stored, as the per-layer path
 * rounds its activations; floats are stored rounded to TF32 (the frame
 * too, and the packer rounds the weights), or for exact FP32 as they are,
 * split into pieces as the products read them. The last layer is each
 * row's dot product in FP32, of the activations as stored. The frame is
 * read once, through pp_cuda_a, converted in the load and rounded as the
 * activations are.
 *
 * Warps (wide_layout.cuh): each a 32 × 32 tile of the block's BM × 128,
 * 2 × 4 fragments a k-step from ldmatrix, four k-steps a weight tile; at
 * 16 bits sixteen warps over 128 rows, because one block fills an SM's
 * shared memory and its warps alone hide each other's latencies; floats,
 * twice the bytes a row, eight warps over 64 rows, or in TF32 on sm_90a
 * two warpgroups, each all 64 rows by 64 of the tile's columns
 * (wgmma_tf32.cuh). The activations lie in 128-byte panels, unpadded and
 * swizzled as the weight tiles are (place), which wgmma reads as they lie
 * and which leaves deep's 192-512-256-64 room for two 16 KB weight tiles
 * beside its activations; smaller models get three.
 *
 * C's fragment (PTX ISA), g = lane / 4, t = lane % 4: c0 (g, 2t), c1 (g,
 * 2t+1), c2 (g+8, 2t), c3 (g+8, 2t+1). */
#include <type_traits>

#include "activation.cuh"
#include "frame_rows.cuh"
#include "smem_optin.cuh"
#include "wide_tiles.cuh"

using namespace pp_wide;

namespace
{

/* The warp's tile of layer l's output, columns n0.. of `h`: act(acc + b)
 * rounded to T (floats: to TF32 where TF32, else kept), zero past l.out
 * (the next layer's padding); acc zeroed. At 16 bits acc + b is rounded
 * before the activation too, as the per-layer path stores its GEMM's
 * output before its activation kernel (and the CPU backend rounds
 * alike), so a model's scores do not depend on the path the planner
 * took. */
template <typename T, int A, bool TF32, typename G>
__device__ __forceinline__ void
store_tile_as(float (&acc)[G::MT][G::NT][4], const pp_cuda_wide_layer &l, unsigned n0, T *h, int wr,
              int wc, int lane)
{
  /* A known kind folds pp_act_apply's switch away. */
  const pp_act act = A == pp::ACT_ANY ? l.act : pp_act{ (pp_act_kind) A, l.act.slope };
  const int g = lane / 4, t = lane % 4;
  auto store = [&](auto all_in) {
    constexpr bool ALL_IN = decltype(all_in)::value;
#pragma unroll
    for (int nt = 0; nt < G::NT; nt++) {
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
          put2<TF32>(h + place<T, true, G::BM>(row, col, 0), v0, v1);
          c[0] = c[1] = 0.f;
        }
    }
  };
  /* A warp whose columns all lie in the layer checks none: with a branch
   * around each value's activation, each waited for the one before
   * (deep's MLP 131 µs); without, the compiler interleaves them (119). */
  if (n0 + (wc + 1) * G::WN <= l.out)
    store(std::true_type{});
  else
    store(std::false_type{});
}

template <typename T, int PASSES, int STAGES, int BLOCKS>
__global__ void
__launch_bounds__(GeometryOf<T>::THREADS, BLOCKS)
    mlp_wide(const pp_cuda_a x, unsigned m, unsigned k, const Net net, float *__restrict__ y)
{
  /* TF32 on warpgroups where the target has wgmma (its panels want 1,024
   * bytes' alignment), else warps. */
  constexpr bool WARPGROUPS = PP_WGMMA_TF32 && sizeof(T) == 4 && PASSES == 1;
  using G = GeometryOf<T, WARPGROUPS>;
  constexpr int BM = G::BM, BK = G::BK;
  extern __shared__ __align__(1024) unsigned char smem[];
  /* Buffer i % 2 and its stride, chosen without indexing (no local memory). */
  T *const base = reinterpret_cast<T *>(smem);
  auto buf = [&](unsigned i) { return i % 2 ? base + BM * net.ld[0] : base; };
  auto ld = [&](unsigned i) { return i % 2 ? net.ld[1] : net.ld[0]; };
  T *const stages = base + BM * (net.ld[0] + net.ld[1]);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int wr = WARPGROUPS ? warp % 4 : warp / (BN / G::WN);
  const int wc = WARPGROUPS ? warp / 4 : warp % (BN / G::WN);
  const unsigned m0 = blockIdx.x * BM;

  const T *const blob = static_cast<const T *>(net.layer[0].w);
  constexpr bool TF32 = sizeof(T) == 4 && PASSES == 1;
  float acc[G::MT][G::NT][4] = {};
  unsigned t = 0, s = 0;
  /* Tile t is multiplied from stage s while tiles t+1 .. t+STAGES-1 are
   * in flight. */
#pragma unroll
  for (int i = 0; i < STAGES - 1; i++)
    load_tile(blob, i, net.tiles, stages + i * BN * BK);
  load_rows<BM, G::THREADS, TF32, true>(x, m, k, m0, buf(0), ld(0));
  for (unsigned li = 0; li + 1 < net.n; li++) {
    const pp_cuda_wide_layer &l = net.layer[li];
    const uint32_t kp = pad64(l.in), np = pad64(l.out);
    /* This warp's rows of the layer's input in its first panel, at its
     * lane's ldmatrix row; a tile's BK inputs are one panel. */
    const T *a = buf(li) + (wr * G::WM + lane % 16) * BK;
#if PP_WGMMA_TF32
    /* A warpgroup's: the layer's first panel, and its rows of stage 0. */
    const uint32_t a_desc = pp::panel_descriptor_lo(buf(li));
    const uint32_t b_desc = pp::panel_descriptor_lo(stages + wc * G::WN * BK);
#endif
    for (unsigned n0 = 0; n0 < np; n0 += BN) {
      /* A warp whose columns lie past the layer's padded width idles. */
      const bool active = n0 + wc * G::WN < np;
      for (unsigned k0 = 0; k0 < kp; k0 += BK, t++) {
        asm volatile("cp.async.wait_group %0;" ::"n"(STAGES - 2) : "memory");
#if PP_WGMMA_TF32
        if constexpr (WARPGROUPS)
          pp::fence_for_products(); /* the tile, and the activations stored before it */
#endif
        __syncthreads(); /* tile t has landed; every warp is done with the stage it replaces */
        const unsigned into = s == 0 ? STAGES - 1 : s - 1;
        load_tile(blob, t + STAGES - 1, net.tiles, stages + into * BN * BK);
        if (active) {
#if PP_WGMMA_TF32
          if constexpr (WARPGROUPS) {
            /* In 16-byte units, added to the descriptors' low words. */
            constexpr uint32_t PANEL = BM * BK * sizeof(T) / 16, STAGE = BN * BK * sizeof(T) / 16;
            multiply_warpgroup<G>(acc, a_desc + k0 / BK * PANEL, b_desc + s * STAGE);
            pp::wgmma_wait(acc);
          } else
#endif
            multiply<T, PASSES, G>(acc, a + (size_t) (k0 / BK) * (BM * BK), stages + s * BN * BK,
                                   wc, lane);
        }
        s = s + 1 == STAGES ? 0 : s + 1;
      }
      if (active)
        pp::with_act(l.act.kind, [&](auto kind) {
          store_tile_as<T, decltype(kind)::value, TF32, G>(acc, l, n0, buf(li + 1), wr, wc, lane);
        });
    }
  }
  asm volatile("cp.async.wait_group 0;" ::: "memory");
  __syncthreads();

  /* The last layer: ROW_THREADS threads a row, each a part of the dot product. */
  constexpr int ROW_THREADS = G::ROW_THREADS;
  const pp_cuda_wide_layer &last = net.layer[net.n - 1];
  const unsigned r = threadIdx.x / ROW_THREADS;
  const T *h = buf(net.n - 1);
  const float *w = static_cast<const float *>(last.w);
  float sum = 0.f;
  for (unsigned j = threadIdx.x % ROW_THREADS; j < last.in; j += ROW_THREADS)
    sum = fmaf(pp::to_float(h[place<T, true, BM>(r, j, 0)]), __ldg(w + j), sum);
#pragma unroll
  for (int lanes = 1; lanes < ROW_THREADS; lanes *= 2)
    sum += __shfl_xor_sync(0xffffffffu, sum, lanes);
  const unsigned row = m0 + r;
  if (threadIdx.x % ROW_THREADS == 0 && row < m)
    y[row] = pp::activate<pp::ACT_ANY>(last.act, sum + (last.b ? __ldg(last.b) : 0.f));
}

/* Three weight tiles in flight where the model leaves room, else two;
 * floats two blocks an SM where two fit, which holds them to 128
 * registers a thread (narrow's 96 KB in TF32: 33.3 µs against 47.3 at one
 * block and 140 registers), else one. */
template <typename T, int PASSES>
cudaError_t
launch(cudaStream_t stream, const pp_cuda_a &x, uint32_t m, uint32_t k, const Net &net, float *y)
{
  using G = GeometryOf<T>;
  constexpr int TWO = sizeof(T) == 4 ? 2 : 1; /* 16-bit blocks are 512 threads */
  int limit = 0;
  cudaError_t err = pp::allow_smem<mlp_wide<T, PASSES, 3, 1>>(&limit);
  if (err == cudaSuccess)
    err = pp::allow_smem<mlp_wide<T, PASSES, 3, TWO>>(&limit);
  if (err == cudaSuccess)
    err = pp::allow_smem<mlp_wide<T, PASSES, 2, 1>>(&limit);
  if (err != cudaSuccess)
    return err;
  const unsigned blocks = (m + G::BM - 1) / G::BM;
  const size_t three = smem_bytes(net, sizeof(T), 3), two = smem_bytes(net, sizeof(T), 2);
  /* An SM holds a block's opt-in limit and the 1 KB the system keeps a
   * block (sm_80 and sm_90). */
  const bool two_fit = 2 * (three + 1024) <= (size_t) limit + 1024;
  if (three <= (size_t) limit && two_fit)
    mlp_wide<T, PASSES, 3, TWO><<<blocks, G::THREADS, three, stream>>>(x, m, k, net, y);
  else if (three <= (size_t) limit)
    mlp_wide<T, PASSES, 3, 1><<<blocks, G::THREADS, three, stream>>>(x, m, k, net, y);
  else if (two <= (size_t) limit)
    mlp_wide<T, PASSES, 2, 1><<<blocks, G::THREADS, two, stream>>>(x, m, k, net, y);
  else
    return cudaErrorInvalidValue;
  return cudaGetLastError();
}

} // namespace

extern "C" cudaError_t
pp_cuda_mlp_wide(cudaStream_t stream, const pp_cuda_a *x, uint32_t m, uint32_t k,
                 const pp_cuda_wide_layer *packed, unsigned n_layers, pp_dtype type, bool tf32,
                 float *y)
{
  uint32_t outs[PP_MAX_WIDE];
  if (!launchable(stream, x, m, k, packed, n_layers, y, outs))
    return cudaErrorInvalidValue;
  /* The blob's layers follow one another, as pp_cuda_wide_pack lays them. */
  for (unsigned i = 1; i + 1 < n_layers; i++)
    if (static_cast<const uint8_t *>(packed[i].w) !=
        static_cast<const uint8_t *>(packed[i - 1].w) +
            (size_t) n_tiles(packed[i - 1], pp_dtype_size(type)) * BN * TILE_ROW_BYTES)
      return cudaErrorInvalidValue;
  const size_t smem = pp_cuda_mlp_wide_smem(type, k, n_layers, outs);
  if (smem == 0)
    return cudaErrorInvalidValue;
  const Net net = net_for(packed, n_layers, pp_dtype_size(type));
  switch (type) {
    case PP_DTYPE_BF16:
      return launch<__nv_bfloat16, 1>(stream, *x, m, k, net, y);
    case PP_DTYPE_F16:
      return launch<__half, 1>(stream, *x, m, k, net, y);
    default:
      return tf32 ? launch<float, 1>(stream, *x, m, k, net, y)
                  : launch<float, 3>(stream, *x, m, k, net, y);
  }
}
