// SPDX-License-Identifier: LGPL-2.1-or-later
/* The warp kernel's geometry, shared by the kernel (mlp_warp.cu) and its
 * packer (mlp_wide_pack.cu): a block's warps and rows, and the image of
 * the model's hidden weights that a block copies into shared memory as it
 * lies. Layer i's weights are D rows (its outputs, zero past `out`) of its
 * padded inputs (pad64(in), zero past `in`), each row's 16-byte chunks
 * swizzled (pp_wide::swz) so that the eight rows an ldmatrix phase reads
 * lie in eight bank groups; the layers one after another. In exact FP32
 * the first layer's column sums follow the image (as the wide kernel's
 * follow its tiles): a frame's bytes are multiplied as they are and the
 * reader's scale and bias come after. And then the first layer again as
 * three bf16 pieces, hi + mid + lo (each rounded to nearest, together
 * FP32's 24 bits), three images laid out as the first: a byte times a
 * bf16 is exact, and three m16n8k16 products of 16 inputs cost less than
 * the four TF32 ones of two m16n8k8 steps, with no split to make. */
#ifndef PP_WARP_LAYOUT_CUH
#define PP_WARP_LAYOUT_CUH

#include "wide_layout.cuh"

namespace pp_warp
{

/* A warp's rows, and every hidden layer at most D wide. */
constexpr int ROWS = 16;
constexpr uint32_t D = PP_WARP_MAX_D;

/* A block of T: eight warps, at 16 bits two blocks an SM, in floats one.
 * Floats from a frame's bytes (BYTE_ROWS) keep the bytes in shared memory
 * as they came, a quarter of the room, so sixteen warps fit beside
 * narrow's weights: four a scheduler, and all of a 1080p frame's rows in
 * one wave, where eight warps of float rows took two (docs/PERFORMANCE.md
 * has what else was tried). */
template <typename T, bool BYTE_ROWS = false> struct Block {
  static constexpr int WARPS = sizeof(T) == 4 && BYTE_ROWS ? 16 : 8, THREADS = WARPS * 32;
  static constexpr int BM = WARPS * ROWS, MIN_BLOCKS = sizeof(T) == 2 ? 2 : 1;
};

/* A row of bytes in words: its padded inputs and four words more, which
 * put the eight rows a quarter of a warp reads in eight bank groups. */
__host__ __device__ inline uint32_t
byte_row_words(uint32_t kp)
{
  return kp / 4 + 4;
}

/* Where hidden layer i's weights start in the image, in elements: D rows
 * of its padded inputs each, the first layer's kp, the others' D; at
 * i = n - 1, the image's size. */
__host__ __device__ inline size_t
w_offset(unsigned i, uint32_t kp)
{
  return i == 0 ? 0 : (size_t) D * kp + (size_t) (i - 1) * D * D;
}

/* Whether the first layer's column sums follow the image. */
__host__ __device__ inline bool
has_sums(pp_dtype type, bool tf32)
{
  return type == PP_DTYPE_F32 && !tf32;
}

/* The first layer's three bf16 pieces, in bytes. */
__host__ __device__ inline size_t
pieces_bytes(uint32_t kp)
{
  return 3 * (size_t) D * kp * 2;
}

/* Where the pieces start, in bytes: after the float image and its sums. */
__host__ __device__ inline size_t
pieces_at(unsigned n_layers, uint32_t kp)
{
  return w_offset(n_layers - 1, kp) * sizeof(float) + D * sizeof(float);
}

/* The image's bytes, and the sums' and pieces' after it. */
inline size_t
packed_bytes(pp_dtype type, bool tf32, unsigned n_layers, uint32_t kp)
{
  return has_sums(type, tf32) ? pieces_at(n_layers, kp) + pieces_bytes(kp)
                              : w_offset(n_layers - 1, kp) * pp_dtype_size(type);
}

/* A block's shared memory: its first layer's weights (in pieces where
 * `pieces`), the other layers', and its rows of the frame, as T (eight
 * warps) or as bytes (sixteen). */
inline size_t
smem_bytes(pp_dtype type, unsigned n_layers, uint32_t kp, bool byte_rows = false,
           bool pieces = false)
{
  const size_t elem = pp_dtype_size(type);
  const size_t first = pieces ? pieces_bytes(kp) : (size_t) D * kp * elem;
  const size_t others = (w_offset(n_layers - 1, kp) - w_offset(1, kp)) * elem;
  if (byte_rows)
    return first + others + (size_t) Block<float, true>::BM * byte_row_words(kp) * 4;
  return first + others + (size_t) Block<float>::BM * kp * elem;
}

} // namespace pp_warp

#endif
