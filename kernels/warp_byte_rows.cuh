// SPDX-License-Identifier: LGPL-2.1-or-later
/* The warp kernel's rows of a frame's bytes (mlp_warp.cu, Block's
 * BYTE_ROWS): copied into shared memory as they lie, a quarter of their
 * floats' room, and the first layer's products made from them, each warp
 * turning its rows' bytes into its A fragments as it reads them. */
#ifndef PP_WARP_BYTE_ROWS_CUH
#define PP_WARP_BYTE_ROWS_CUH

#include "gemm_mainloop.cuh"
#include "warp_fragments.cuh"

namespace pp_warp
{

/* The block's ROWS rows of bytes from m0 (PP_A_U8_VEC4) copied into
 * shared memory as they lie, a word a copy, the words the frame lacks
 * (past k, past m) zeros, each row `stride` words; its copies are the
 * next cp.async group's. Each thread keeps one word of a row, its offset
 * read once, and takes every per_pass-th row (a row's words fit the
 * threads: kp ≤ 4 × THREADS). */
template <int ROWS, int THREADS>
__device__ __forceinline__ void
copy_byte_rows(const pp_cuda_a &x, unsigned m, unsigned k, unsigned m0, uint32_t kp, uint32_t *h)
{
  const unsigned groups = kp / 4, per_pass = THREADS / groups, col = threadIdx.x % groups * 4;
  const uint32_t stride = byte_row_words(kp);
  if (threadIdx.x >= per_pass * groups)
    return;
  const long long offset = col < k ? __ldg(x.k_offset + col) : 0;
  const unsigned char *frame = static_cast<const unsigned char *>(x.data);
  for (unsigned r = threadIdx.x / groups; r < ROWS; r += per_pass) {
    const bool ok = m0 + r < m && col < k;
    pp::cp_async4(h + r * stride + col / 4,
                  frame + (ok ? pp::sample_origin(x, m0 + r) + offset : 0), ok);
  }
}

/* Exact FP32's first layer from rows of bytes as they came: each 16
 * inputs one bf16 k-step (m16n8k16) times each of the weights' three bf16
 * pieces (warp_layout.cuh), lo, mid, then hi, a lane's A its rows' bytes
 * 2t, 2t + 1 and 2t + 8, 2t + 9 as bf16 (exact: a byte has 8 bits); the
 * reader's scale and bias after. Rows `row` and row + 8 of the block's. */
__device__ __forceinline__ void
first_in_pieces(float (&acc)[NT][4], const pp_cuda_a &x, uint32_t kp, const float *sums,
                const __nv_bfloat16 *pieces, const uint32_t *rows, unsigned row, int lane)
{
  const uint32_t stride = byte_row_words(kp);
  const uint32_t *r0 = rows + row * stride, *r1 = r0 + 8 * stride;
  const size_t image = (size_t) D * kp;
  const unsigned t = lane % 4;
  /* Bytes 2 (t % 2) and 2 (t % 2) + 1 of a word under 0x4B0000, 2^23 +
   * byte as a float, whose high half is the byte's bf16. */
  const uint32_t sel0 = 0x7540u | (2 * (t % 2)), sel1 = sel0 + 1;
  auto pair = [&](uint32_t word) {
    const float b0 = __uint_as_float(__byte_perm(word, 0x4B000000u, sel0)) - 8388608.f;
    const float b1 = __uint_as_float(__byte_perm(word, 0x4B000000u, sel1)) - 8388608.f;
    return __byte_perm(__float_as_uint(b0), __float_as_uint(b1), 0x7632);
  };
  uint32_t bf[NT][2];
  for (unsigned i = 0; i < kp / 4; i += 4) {
    const uint4 q0 = *reinterpret_cast<const uint4 *>(r0 + i);
    const uint4 q1 = *reinterpret_cast<const uint4 *>(r1 + i);
    const uint32_t af[4] = { pair(t & 2 ? q0.y : q0.x), pair(t & 2 ? q1.y : q1.x),
                             pair(t & 2 ? q0.w : q0.z), pair(t & 2 ? q1.w : q1.z) };
#pragma unroll
    for (int p = 2; p >= 0; p--) {
      b_fragments<true>(bf, pieces + p * image, kp, 4 * i, lane);
#pragma unroll
      for (int nt = 0; nt < NT; nt++)
        pp::mma16(acc[nt], af, bf[nt], __nv_bfloat16());
    }
  }
  from_bytes(acc, x.scale, x.bias, sums, lane);
}

/* TF32's first layer from rows of bytes as they came (Block's BYTE_ROWS),
 * rows `row` and row + 8 of the block's: each 16 inputs two k-steps, a
 * lane's byte t of each of their four words (inputs t, t + 4 of each
 * step) made the reader's byte·scale + bias rounded to TF32. */
__device__ __forceinline__ void
first_from_bytes(float (&acc)[NT][4], const pp_cuda_a &x, uint32_t kp, const float *w_s,
                 const uint32_t *rows, unsigned row, int lane)
{
  const uint32_t stride = byte_row_words(kp);
  const uint32_t *r0 = rows + row * stride, *r1 = r0 + 8 * stride;
  /* Byte t under 0x4B0000, 2^23 + byte as a float. */
  const uint32_t sel = 0x7540u | (uint32_t) (lane % 4);
  auto value = [&](uint32_t word) {
    const float b = __uint_as_float(__byte_perm(word, 0x4B000000u, sel)) - 8388608.f;
    return pp::nearest_tf32_bits(fmaf(b, x.scale, x.bias));
  };
  uint32_t bf[NT][2];
  for (unsigned i = 0; i < kp / 4; i += 4) {
    const uint4 q0 = *reinterpret_cast<const uint4 *>(r0 + i);
    const uint4 q1 = *reinterpret_cast<const uint4 *>(r1 + i);
    const uint32_t w0[4] = { q0.x, q0.y, q0.z, q0.w }, w1[4] = { q1.x, q1.y, q1.z, q1.w };
#pragma unroll
    for (int s = 0; s < 2; s++) {
      const uint32_t af[4] = { value(w0[2 * s]), value(w1[2 * s]), value(w0[2 * s + 1]),
                               value(w1[2 * s + 1]) };
      b_fragments<true>(bf, w_s, kp, 4 * i + 8 * s, lane);
      multiply<float, 1>(acc, af, bf);
    }
  }
}

} // namespace pp_warp

#endif
