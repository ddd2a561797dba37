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

/* A weight tile's columns, and the bytes of its rows. */
constexpr int BN = 128, TILE_ROW_BYTES = 128;

/* A block's geometry for elements of ELEM bytes: 2 (bf16, f16) or 4
 * (floats, multiplied as TF32 or as exact FP32 in TF32 pieces). A weight
 * tile is BN rows of BK inputs, one 128-byte row of eight 16-byte chunks
 * (the swizzle's span), 16 KB whatever the type. Each warp owns a 32 × 32
 * tile of the block's BM × BN. Measured on deep's shape at 16 bits
 * (docs/PERFORMANCE.md): sixteen warps of 32 × 32 took 131 µs; eight of
 * 64 × 32 (fewer fragment loads a product, more registers) 164; 64-row
 * blocks, two an SM, 136. Floats take twice the room a row: deep's
 * activations fill 192 KB of an SM's 227 at 64 rows a block, so 32-bit
 * blocks are 64 rows and eight warps (sixteen of 32 × 16 or 16 × 32 were
 * slower). */
template <int ELEM, bool WARPGROUPS = false> struct Geometry {
  static constexpr int CHUNK = 16 / ELEM; /* elements in 16 bytes */
  static constexpr int BK = TILE_ROW_BYTES / ELEM, BM = ELEM == 2 ? 128 : 64;
  /* With warpgroup products (wgmma_tf32.cuh) a warpgroup owns the block's
   * 64 rows and half of its 128 columns, each of its warps 16 of those
   * rows: the warp's part of the accumulator is then an mma.sync 16 × 64. */
  static constexpr int WM = WARPGROUPS ? 16 : 32, WN = WARPGROUPS ? 64 : 32;
  static constexpr int MT = WM / 16, NT = WN / 8;
  static constexpr int WARPS = BM / WM * (BN / WN), THREADS = WARPS * 32;
  static constexpr int KSTEP = 2 * CHUNK;                  /* a product's inputs: 16 or 8 */
  static constexpr int ROW_THREADS = THREADS / BM;         /* the last layer's threads a row */
  static constexpr int COPIES = BN * BK / CHUNK / THREADS; /* a thread's 16-byte copies a tile */
  static_assert(BN * BK / CHUNK == COPIES * THREADS, "whole copies");
  static_assert(BK == 8 * CHUNK, "a tile's row is the eight chunks its swizzle permutes");
  static_assert(BM % WM == 0 && BN % WN == 0, "the warps cover the block's tile");
};

template <typename T, bool WARPGROUPS = false>
using GeometryOf = Geometry<(int) sizeof(T), WARPGROUPS>;

struct Net {
  pp_cuda_wide_layer layer[PP_MAX_WIDE]; /* layer[0].w: the blob's first tile */
  unsigned n;
  unsigned tiles;               /* in the blob (parts, where tiles are in parts) */
  uint32_t ld[2];               /* each activation buffer's row stride, in elements */
  uint8_t src[PP_MAX_WIDE + 1]; /* the buffer (0, 1) that holds each layer's input */
};

/* Widths are padded to whole rows of eight chunks, the swizzle's span. */
__host__ __device__ constexpr uint32_t
pad64(uint32_t v)
{
  return (v + 63u) & ~63u;
}

/* Element `col` of a shared row `row` of T: its 16-byte chunk's index XOR
 * the row's low three bits. The eight rows an ldmatrix phase reads at one
 * logical chunk land in eight different bank groups, without padding. */
template <typename T>
__device__ __forceinline__ unsigned
swz(unsigned row, unsigned col)
{
  constexpr unsigned CHUNK = 16 / sizeof(T);
  return (((col / CHUNK) ^ (row & 7u)) * CHUNK) | (col % CHUNK);
}

/* Element (row, col) of a buffer of ROWS rows of T. In panels
 * (PANELS): the buffer is the columns' 128-byte panels one after another,
 * each ROWS rows of 128 bytes, swizzled, the layout a weight tile has and
 * a warpgroup product reads from shared memory (eight rows of 128 bytes
 * in 1,024). Else rows of `ld` elements one after another (ld unused in
 * panels). Either way the eight rows an ldmatrix phase reads at one
 * logical chunk lie in eight bank groups. */
template <typename T, bool PANELS, int ROWS>
__device__ __forceinline__ unsigned
place(unsigned row, unsigned col, uint32_t ld)
{
  constexpr unsigned PW = TILE_ROW_BYTES / sizeof(T);
  if constexpr (PANELS)
    return col / PW * (ROWS * PW) + row * PW + swz<T>(row, col % PW);
  else
    return row * ld + swz<T>(row, col);
}

/* Exact FP32 on warpgroups (wide_pieces.cuh) multiplies two TF32 pieces
 * of each operand, the activations' split as each warp reads them into
 * registers, the weights' once by the packer. A weight tile is then two
 * parts of a tile's bytes, one for each warpgroup's 64 columns, each those
 * columns' high pieces (64 rows of 128 bytes, as a tile's rows lie) and
 * then their low pieces. */
constexpr unsigned PIECE_PARTS = 2;

/* In such a part, the input a row holds at position i of its 32: the
 * products take a k-step's 8 inputs, thread t those at t and t + 4, so
 * with inputs in this order a thread's eight of a tile's four k-steps lie
 * in two neighbouring 16-byte chunks of a row of activations, two loads,
 * not eight. The products add the same terms in their own order. */
__host__ __device__ constexpr unsigned
piece_k(unsigned i)
{
  return 8 * (i % 8 % 4) + 2 * (i / 8) + i % 8 / 4;
}

/* Whether the current device runs the wide kernel's exact FP32 on
 * warpgroups (mlp_wide.cu), which reads its weights in parts. */
cudaError_t exact_on_warpgroups(bool *yes);

/* The parts a weight tile is packed in at this precision on the current
 * device: PIECE_PARTS where exact FP32 runs on warpgroups, else 1. */
inline cudaError_t
tile_parts(pp_dtype type, bool tf32, unsigned *parts)
{
  bool yes = false;
  const cudaError_t err = type == PP_DTYPE_F32 && !tf32 ? exact_on_warpgroups(&yes) : cudaSuccess;
  *parts = yes ? PIECE_PARTS : 1;
  return err;
}

/* A hidden layer's weight tiles of `elem`-byte values: column tiles ×
 * input tiles, each in `parts` of a tile's bytes. */
__host__ __device__ inline unsigned
n_tiles(const pp_cuda_wide_layer &l, size_t elem, unsigned parts = 1)
{
  return (pad64(l.out) + BN - 1) / BN * (unsigned) (pad64(l.in) * elem / TILE_ROW_BYTES) * parts;
}

/* Where the frame's inputs are bytes, the floats on warpgroups multiply
 * them in the first layer as FP16 (wide_bytes.cuh), which has TF32's 11
 * bits, against FP16 weights, each column scaled by the power of two 2^e_n
 * that puts its largest weight in [2^14, 2^15), inside FP16's range. In
 * exact FP32 the bytes as they are, which FP16 holds exactly, against two
 * pieces of each weight, hi = w·2^e_n to FP16 and lo = w·2^e_n − hi,
 * which keep a TF32 pair's 22 bits: two products of 16 inputs where TF32
 * pieces took four of 8, and the reader's scale and bias after the
 * products, as scale·2^−e_n·Σ byte·w·2^e_n + bias·Σ w. In TF32 the
 * reader's values rounded to FP16's 11 bits (TF32's, ties to even), where
 * FP16 holds them (values_in_fp16), stored in FP16 panels the products
 * read as they lie, against the weights rounded to TF32 and scaled, hi
 * alone: one product of 16 inputs where TF32 took two of 8, the sums of
 * each 2^−e_n after them. Either way a part of
 * the ring holds 64 inputs, not 32, in the same 16 KB. After the tiles the
 * packer stores each column's Σ w, pad64(out) floats, then each column's
 * 2^−e_n, as many, then the layer's FP16 tiles in the order 16-bit tiles
 * would lie (n_tiles of 2-byte values): in exact FP32 each tile's two
 * parts, a warpgroup's 64 rows of 128 bytes, each row's 64 high pieces in
 * half_k's order, then their low ones; in TF32 a tile's 128 rows of high
 * pieces, inputs in their order; swizzled as a stage's rows are. */
__host__ __device__ inline size_t
column_sums_bytes(const pp_cuda_wide_layer &first)
{
  return pad64(first.out) * sizeof(float);
}

/* The bytes a blob of tiles in `parts` stores after its tiles for the
 * first layer on bytes. */
__host__ __device__ inline size_t
bytes_layer_bytes(const pp_cuda_wide_layer &first, unsigned parts)
{
  return 2 * column_sums_bytes(first) + (size_t) n_tiles(first, 2, parts) * BN * TILE_ROW_BYTES;
}

/* In an FP16 part, the input a row holds at position i of its 64: a
 * k-step's 16, thread t those at 2t, 2t + 1, 2t + 8 and 2t + 9, so that a
 * thread's inputs of each 32 (an activation panel's) are the eight
 * piece_k gives it there, two 16-byte loads of each of its rows. */
__host__ __device__ constexpr unsigned
half_k(unsigned i)
{
  return 32 * (i / 32) + 8 * (i % 8 / 2) + 4 * (i % 32 / 16) + 2 * (i % 16 / 8) + i % 2;
}

/* Whether a hidden layer's output, at most two column tiles, may replace
 * its input in the same buffer: the kernel holds the layer's results in
 * registers until every product of the layer is done. */
__host__ __device__ inline bool
in_place(const pp_cuda_wide_layer &l)
{
  return pad64(l.out) <= 2 * BN;
}

/* The buffers that hold each layer's input: taking turns, or where
 * `inplace`, a layer that may (in_place) writing over its input, which
 * leaves more of shared memory for weight tiles (deep's 192-512-256-64:
 * 176 KB of activations, not 192). Each buffer's stride: the widest input
 * it holds. The blob's tiles of `elem`-byte values, in `parts` each
 * (Net::tiles counts parts). */
inline Net
net_for(const pp_cuda_wide_layer *layers, unsigned n_layers, size_t elem, bool inplace = false,
        unsigned parts = 1)
{
  Net net = {};
  net.n = n_layers;
  for (unsigned i = 0; i < n_layers; i++) {
    net.layer[i] = layers[i];
    const unsigned b = net.src[i];
    const uint32_t ld = pad64(layers[i].in);
    net.ld[b] = ld > net.ld[b] ? ld : net.ld[b];
    net.src[i + 1] = inplace && i + 1 < n_layers && in_place(layers[i]) ? b : 1 - b;
    if (i + 1 < n_layers)
      net.tiles += n_tiles(layers[i], elem, parts);
  }
  return net;
}

/* Whether the packed layers follow one another in the blob, as
 * pp_cuda_wide_pack lays them, their tiles of `elem`-byte values in
 * `parts` each. */
inline bool
chained(const pp_cuda_wide_layer *packed, unsigned n_layers, size_t elem, unsigned parts)
{
  for (unsigned i = 1; i + 1 < n_layers; i++)
    if (static_cast<const uint8_t *>(packed[i].w) !=
        static_cast<const uint8_t *>(packed[i - 1].w) +
            (size_t) n_tiles(packed[i - 1], elem, parts) * BN * TILE_ROW_BYTES)
      return false;
  return true;
}

/* Whether the one-kernel MLPs that read the packed blob (wide, warp) take
 * a model of these widths: 2 to 8 layers, hidden ones 1 to max_d wide, one
 * output. */
inline bool
takes(uint32_t k, unsigned n_layers, const uint32_t *outs, uint32_t max_d)
{
  return k > 0 && pp_cuda_one_output_fits(n_layers, outs, 2, PP_MAX_WIDE, max_d);
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

/* Room for a stage's barriers where a ring holds the tiles
 * (tile_ring.cuh): two, or three where exact FP32's warpgroups each wait
 * for their own parts (wide_pieces.cuh). */
constexpr unsigned STAGE_BARRIER_BYTES = 24;

/* Shared memory a block of `elem`-byte values needs with `stages` weight
 * tiles and their barriers. */
inline size_t
smem_bytes(const Net &net, size_t elem, int stages)
{
  const size_t bm = elem == 2 ? Geometry<2>::BM : Geometry<4>::BM;
  return bm * (net.ld[0] + net.ld[1]) * elem +
         (size_t) stages * (BN * TILE_ROW_BYTES + STAGE_BARRIER_BYTES);
}

} // namespace pp_wide

#endif
