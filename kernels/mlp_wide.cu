// SPDX-License-Identifier: LGPL-2.1-or-later
/* The wide kernel: an MLP of 2 to 8 layers whose hidden layers are up to
 * 512 wide and whose output is one value, in one launch, at a 16-bit
 * precision or in floats (TF32, or exact FP32 in TF32 pieces). A block
 * owns BM rows and keeps all their activations in shared memory, in two
 * buffers that take turns layer by layer, so no activation touches device
 * memory. Each hidden layer is a GEMM of those activations and the
 * layer's weights, which stream from the packed blob through shared
 * memory in BN × BK tiles, the next one or two in flight while this one
 * is multiplied on the tensor cores (wide_layers.cuh: mma.sync and
 * cp.async, or for TF32 on sm_90a wgmma and a ring the copy engine
 * fills; FP32 sums: wide_tiles.cuh). The tiles run on across column
 * tiles and layers without a pause, weights not depending on activations,
 * and lie in the blob in the order they are used, so a tile's address is
 * its number. The bias and activation are added in FP32 and the result
 * rounded to the 16-bit type as it is stored, as the per-layer path
 * rounds its activations; floats are stored rounded to TF32 (the frame
 * too, and the packer rounds the weights), or for exact FP32 as they are,
 * split into pieces as the products read them. The last layer is each
 * row's dot product in FP32, of the activations as stored. The frame is
 * read once, through pp_cuda_a, converted in the load and rounded as the
 * activations are, but where the floats on sm_90a take a frame of bytes:
 * there the first layer runs in FP16 (wide_bytes.cuh), the bytes as they
 * are in exact FP32, the values rounded to FP16's 11 bits in TF32.
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
 * beside its activations; smaller models get three, and deep too in TF32
 * on warpgroups, whose layers 256 wide and less write over their inputs
 * (net_for). */
#include "kernel_on_device.cuh"
#include "wide_pieces.cuh"

using namespace pp_wide;

namespace
{

template <typename T, int PASSES, int STAGES, int BLOCKS>
__global__ void
__launch_bounds__(GeometryOf<T>::THREADS, BLOCKS)
    mlp_wide(const pp_cuda_a x, unsigned m, unsigned k, const Net net, float *__restrict__ y)
{
  /* Floats on warpgroups where the target has wgmma (its panels want
   * 1,024 bytes' alignment), else warps. */
  constexpr bool WARPGROUPS = PP_WGMMA_TF32 && sizeof(T) == 4;
  using G = GeometryOf<T, WARPGROUPS>;
  constexpr int BM = G::BM;
  extern __shared__ __align__(1024) unsigned char smem[];
  const Smem<T, G, STAGES> sm{ reinterpret_cast<T *>(smem), net };
  const unsigned m0 = blockIdx.x * BM;
#if PP_WGMMA_TF32
  if constexpr (WARPGROUPS && PASSES == 1)
    /* Two blocks an SM leave no registers to keep a tile in, and no
     * launch asks them to. */
    layers_on_ring<STAGES, BLOCKS == 1, G>(x, m, k, net, sm);
  else if constexpr (WARPGROUPS)
    layers_in_pieces<STAGES, BLOCKS == 1, G>(x, m, k, net, sm);
  else
#endif
    layers_by_warps<T, PASSES, STAGES, G>(x, m, k, net, sm);

  /* The last layer: ROW_THREADS threads a row, each a part of the dot product. */
  constexpr int ROW_THREADS = G::ROW_THREADS;
  const pp_cuda_wide_layer &last = net.layer[net.n - 1];
  const unsigned r = threadIdx.x / ROW_THREADS;
  const T *h = sm.buf(net.src[net.n - 1]);
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
 * block and 140 registers), else one. Floats on warpgroups: a model that
 * leaves room for two only (deep's) gets three by writing layers over
 * their inputs where they may (net_for). */
template <typename T, int PASSES>
cudaError_t
launch(cudaStream_t stream, const pp_cuda_a &x, uint32_t m, uint32_t k,
       const pp_cuda_wide_layer *packed, unsigned n_layers, float *y)
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
  /* Whether the sm_90a code runs: exact FP32 there reads its tiles in
   * parts (tile_parts, as the packer asked); asked below for TF32 only
   * where a layer over its input would help. */
  bool wg = false;
  if (PASSES == 3 && (err = pp::runs_sm90a<mlp_wide<T, PASSES, 3, 1>>(&wg)) != cudaSuccess)
    return err;
  const unsigned parts = PASSES == 3 && wg ? PIECE_PARTS : 1;
  if (!chained(packed, n_layers, sizeof(T), parts))
    return cudaErrorInvalidValue;
  Net net = net_for(packed, n_layers, sizeof(T), false, parts);
  const unsigned blocks = (m + G::BM - 1) / G::BM;
  size_t three = smem_bytes(net, sizeof(T), 3);
  const size_t two = smem_bytes(net, sizeof(T), 2);
  if (sizeof(T) == 4 && three > (size_t) limit) {
    if (PASSES == 1 && (err = pp::runs_sm90a<mlp_wide<T, PASSES, 3, 1>>(&wg)) != cudaSuccess)
      return err;
    const Net over = net_for(packed, n_layers, sizeof(T), true, parts);
    if (wg && smem_bytes(over, sizeof(T), 3) <= (size_t) limit) {
      net = over;
      three = smem_bytes(net, sizeof(T), 3);
    }
  }
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

cudaError_t
pp_wide::exact_on_warpgroups(bool *yes)
{
  return pp::runs_sm90a<mlp_wide<float, 3, 3, 1>>(yes);
}

extern "C" cudaError_t
pp_cuda_mlp_wide(cudaStream_t stream, const pp_cuda_a *x, uint32_t m, uint32_t k,
                 const pp_cuda_wide_layer *packed, unsigned n_layers, pp_dtype type, bool tf32,
                 float *y)
{
  uint32_t outs[PP_MAX_WIDE];
  if (!launchable(stream, x, m, k, packed, n_layers, y, outs))
    return cudaErrorInvalidValue;
  if (pp_cuda_mlp_wide_smem(type, k, n_layers, outs) == 0)
    return cudaErrorInvalidValue;
  switch (type) {
    case PP_DTYPE_BF16:
      return launch<__nv_bfloat16, 1>(stream, *x, m, k, packed, n_layers, y);
    case PP_DTYPE_F16:
      return launch<__half, 1>(stream, *x, m, k, packed, n_layers, y);
    default:
      return tf32 ? launch<float, 1>(stream, *x, m, k, packed, n_layers, y)
                  : launch<float, 3>(stream, *x, m, k, packed, n_layers, y);
  }
}
