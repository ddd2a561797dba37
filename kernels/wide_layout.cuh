// SPDX-License-Identifier: LGPL-2.1-or-later
/* The wide kernel's geometry, shared by the kernel (mlp_wide.cu) and its
 * packer (mlp_wide_pack.cu): block and warp tiles, the weight tiles' order
 * in the blob, the swizzle of shared rows, and the shared memory a model
 * needs. */
#ifndef PP_WIDE_LAYOUT_CUH
#define PP_WIDE_LAYOUT_CUH

#include "cuda_kernels.h"

namespace pp_wide
{

/* Measured on deep's shape (docs/PERFORMANCE.md): sixteen warps of
 * 32 × 32 took 131 µs; eight of 64 × 32 (fewer fragment loads a product,
 * more registers) 164; 64-row blocks, two an SM, 136. */
constexpr int WARPS = 16, THREADS = WARPS * 32, BM = 128, BN = 128, BK = 64;
constexpr int WN = 32, WM = BM * BN / (WARPS * WN), MT = WM / 16, NT = WN / 8;
constexpr int CHUNK = 8;                          /* elements in 16 bytes */
constexpr int ROW_THREADS = THREADS / BM;         /* the last layer's threads a row */
constexpr int COPIES = BN * BK / CHUNK / THREADS; /* a thread's 16-byte copies a tile */
static_assert(BN * BK / CHUNK == COPIES * THREADS, "whole copies");
static_assert(BK == 8 * CHUNK, "a tile's row is the eight chunks its swizzle permutes");
static_assert(WM * (BN / WN) * WN * (BM / WM) == BM * BN && (BM / WM) * (BN / WN) == WARPS,
              "the warps cover the block's tile");

struct Net {
  pp_cuda_wide_layer layer[PP_MAX_WIDE]; /* layer[0].w: the blob's first tile */
  unsigned n;
  unsigned tiles; /* in the blob */
  uint32_t ld[2]; /* each activation buffer's row stride, in elements */
};

/* Widths are padded to whole rows of eight chunks, the swizzle's span. */
__host__ __device__ constexpr uint32_t
pad64(uint32_t v)
{
  return (v + 63u) & ~63u;
}

/* Element `col` of shared row `row`: its 16-byte chunk's index XOR the
 * row's low three bits. The eight rows an ldmatrix phase reads at one
 * logical chunk land in eight different bank groups, without padding. */
__device__ __forceinline__ unsigned
swz(unsigned row, unsigned col)
{
  return (((col / CHUNK) ^ (row & 7u)) * CHUNK) | (col % CHUNK);
}

/* A hidden layer's weight tiles: column tiles × input tiles. */
__host__ __device__ inline unsigned
n_tiles(const pp_cuda_wide_layer &l)
{
  return (pad64(l.out) + BN - 1) / BN * (pad64(l.in) / BK);
}

/* Each buffer's stride: the widest input of the layers whose input it
 * holds; the blob's tiles. */
inline Net
net_for(const pp_cuda_wide_layer *layers, unsigned n_layers)
{
  Net net = {};
  net.n = n_layers;
  for (unsigned i = 0; i < n_layers; i++) {
    net.layer[i] = layers[i];
    const uint32_t ld = pad64(layers[i].in);
    net.ld[i % 2] = ld > net.ld[i % 2] ? ld : net.ld[i % 2];
    if (i + 1 < n_layers)
      net.tiles += n_tiles(layers[i]);
  }
  return net;
}

/* Whether the one-kernel MLPs that read the packed blob (wide, warp) take
 * a model of these widths: bf16 or f16, 2 to 8 layers, hidden ones 1 to
 * max_d wide, one output. */
inline bool
takes(pp_dtype type, uint32_t k, unsigned n_layers, const uint32_t *outs, uint32_t max_d)
{
  if ((type != PP_DTYPE_BF16 && type != PP_DTYPE_F16) || n_layers < 2 || n_layers > PP_MAX_WIDE ||
      k == 0 || outs[n_layers - 1] != 1)
    return false;
  for (unsigned i = 0; i + 1 < n_layers; i++)
    if (outs[i] == 0 || outs[i] > max_d)
      return false;
  return true;
}

/* Whether a launch's arguments hold together: every pointer given, the
 * frame's reader complete, the packed layers chained from k; `outs`
 * gets the layers' widths. */
inline bool
launchable(cudaStream_t stream, const pp_cuda_a *x, uint32_t m, uint32_t k,
           const pp_cuda_wide_layer *packed, unsigned n_layers, const float *y, uint32_t *outs)
{
  if (!stream || !x || !packed || !y || m == 0 || n_layers < 2 || n_layers > PP_MAX_WIDE ||
      (x->kind != PP_A_F32 && !x->k_offset) || packed[0].in != k)
    return false;
  for (unsigned i = 0; i < n_layers; i++) {
    outs[i] = packed[i].out;
    if (!packed[i].w || (i > 0 && packed[i].in != packed[i - 1].out))
      return false;
  }
  return true;
}

/* Shared memory a block needs with `stages` weight tiles. */
inline size_t
smem_bytes(const Net &net, size_t elem, int stages)
{
  return ((size_t) BM * (net.ld[0] + net.ld[1]) + (size_t) stages * BN * BK) * elem;
}

} // namespace pp_wide

#endif
