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
 * reader's scale and bias come after. */
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

/* The image's bytes, and the sums' after it. */
inline size_t
packed_bytes(pp_dtype type, bool tf32, unsigned n_layers, uint32_t kp)
{
  return w_offset(n_layers - 1, kp) * pp_dtype_size(type) +
         (has_sums(type, tf32) ? D * sizeof(float) : 0);
}

/* A block's shared memory: the image and its rows of the frame, as T
 * (eight warps) or as bytes (sixteen). */
inline size_t
smem_bytes(pp_dtype type, unsigned n_layers, uint32_t kp, bool byte_rows = false)
{
  const size_t image = w_offset(n_layers - 1, kp) * pp_dtype_size(type);
  if (byte_rows)
    return image + (size_t) Block<float, true>::BM * byte_row_words(kp) * 4;
  return image + (size_t) Block<float>::BM * kp * pp_dtype_size(type);
}

} // namespace pp_warp

#endif
