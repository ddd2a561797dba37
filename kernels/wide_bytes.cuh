// SPDX-License-Identifier: LGPL-2.1-or-later
/* The floats' first layer on a frame's bytes, on sm_90a, in FP16
 * (wide_layout.cuh, half_k): in exact FP32 (wide_pieces.cuh runs it) the
 * bytes, which FP16 holds exactly, times the weights' two scaled FP16
 * pieces, two products of 16 inputs a k-step where the TF32 pieces took
 * four of 8, the reader's scale and bias after them (from_bytes); in
 * TF32 (wide_layers.cuh) the reader's values in FP16 panels times the
 * weights' high pieces, one product where TF32 took two (multiply_fp16).
 * Half the tensor cores' time of the layer, and a part of the ring 64
 * inputs, not 32. */
#ifndef PP_WIDE_BYTES_CUH
#define PP_WIDE_BYTES_CUH

#include "wide_layout.cuh"
#include "wgmma_tf32.cuh"

namespace pp_wide
{

/* What the packer stores after the tiles for the first layer on bytes:
 * its columns' sums and scales, and its FP16 parts, n_parts where the
 * layer has tf32_parts (parts of the ring either way). */
struct BytesLayer {
  const float *sums, *scales;
  const uint8_t *parts;
  unsigned n_parts, tf32_parts;

  /* The ring's parts: the first layer's FP16 ones in place of its TF32
   * ones (a BytesLayer{} has none: the blob's parts as they are). */
  __device__ unsigned ring_parts(const Net &net) const
  {
    return net.tiles - tf32_parts + n_parts;
  }
  /* Where the ring's part v lies, each part a tile's bytes. */
  __device__ const void *ring_part(const Net &net, unsigned v) const
  {
    constexpr size_t BYTES = BN * TILE_ROW_BYTES;
    return v < n_parts ? parts + v * BYTES
                       : static_cast<const uint8_t *>(net.layer[0].w) +
                             (size_t) (v - n_parts + tf32_parts) * BYTES;
  }
};

__device__ __forceinline__ BytesLayer
bytes_layer(const Net &net, unsigned parts)
{
  const pp_cuda_wide_layer &first = net.layer[0];
  const uint8_t *at =
      static_cast<const uint8_t *>(first.w) + (size_t) net.tiles * BN * TILE_ROW_BYTES;
  const float *sums = reinterpret_cast<const float *>(at);
  return { sums, sums + pad64(first.out), at + 2 * column_sums_bytes(first),
           n_tiles(first, 2, parts), n_tiles(first, sizeof(float), parts) };
}

/* Whether FP16 holds the values the reader makes of bytes, byte·scale +
 * bias, with TF32's 11 bits: inside its range, and with a scale of at
 * least 2^−10, so that a value FP16 holds with fewer bits (below 2^−14)
 * is far below a byte's step and off by at most 2^−25. */
__device__ __forceinline__ bool
values_in_fp16(const pp_cuda_a &x)
{
  return 255.f * fabsf(x.scale) + fabsf(x.bias) <= 32768.f && fabsf(x.scale) >= 1.f / 1024.f;
}

#if PP_WGMMA_TF32
/* A part's 64 bytes a row as this thread's FP16 A fragments of its four
 * k-steps (wgmma_m64n64k16_f16_rs's a): rows g and g + 8 of the warp's 16
 * (wr), in each of the two activation panels from `p` (BM × 32 floats
 * each) the 8 inputs half_k gives lane t, two 16-byte chunks a row. */
template <int BM>
__device__ __forceinline__ void
a_halves(uint32_t (&a)[4][4], const float *p, int wr, int lane)
{
  const unsigned g = lane / 4, t = lane % 4, row = wr * 16 + g;
#pragma unroll
  for (int q = 0; q < 2; q++) {
    float4 v[2][2]; /* [row g, g + 8][chunk: k-step] */
#pragma unroll
    for (int h = 0; h < 2; h++)
#pragma unroll
      for (int c = 0; c < 2; c++)
        v[h][c] = *reinterpret_cast<const float4 *>(p + q * BM * 32 + (row + 8 * h) * 32 +
                                                    ((2 * t + c) ^ g) * 4);
#pragma unroll
    for (int j = 0; j < 2; j++) {
      a[2 * q + j][0] = pp::pack2<__half>(v[0][j].x, v[0][j].y);
      a[2 * q + j][1] = pp::pack2<__half>(v[1][j].x, v[1][j].y);
      a[2 * q + j][2] = pp::pack2<__half>(v[0][j].z, v[0][j].w);
      a[2 * q + j][3] = pp::pack2<__half>(v[1][j].z, v[1][j].w);
    }
  }
}

/* acc += a part of bytes: a warpgroup's 64 rows (a) times its 64
 * columns' FP16 pieces in a stage (b: the descriptor's low word of their
 * high pieces; the low ones lie a half part on), four k-steps of two
 * products, issued and committed. */
__device__ __forceinline__ void
multiply_halves(float (&acc)[1][8][4], const uint32_t (&a)[4][4], uint32_t b)
{
  constexpr uint32_t LO = BN / 2 * TILE_ROW_BYTES / 16;
  pp::wgmma_pin(acc);
  pp::wgmma_fence();
#pragma unroll
  for (int j = 0; j < 4; j++) { /* 32 bytes a step: 2 in the address's units */
    pp::wgmma_m64n64k16_f16_rs(acc, a[j], pp::panel_descriptor(b + LO + 2 * j));
    pp::wgmma_m64n64k16_f16_rs(acc, a[j], pp::panel_descriptor(b + 2 * j));
  }
  pp::wgmma_commit();
}

/* acc += a tile of 64 inputs in FP16, TF32's first layer on bytes: a
 * warpgroup's 64 rows in an activation panel of halves (a: its
 * descriptor's low word) times its 64 columns' rows in a stage (b), four
 * k-steps, issued and committed. */
__device__ __forceinline__ void
multiply_fp16(float (&acc)[1][8][4], uint32_t a, uint32_t b)
{
  pp::wgmma_pin(acc);
  pp::wgmma_fence();
#pragma unroll
  for (int j = 0; j < 4; j++) /* 32 bytes a step: 2 in the address's units */
    pp::wgmma_m64n64k16_f16(acc, pp::panel_descriptor(a + 2 * j), pp::panel_descriptor(b + 2 * j));
  pp::wgmma_commit();
}

/* A warpgroup's products of bytes made the products of the values the
 * reader gives, byte·scale + bias: acc·scale·2^−e + bias·Σ w of each
 * column, from the layer's sums and scales. */
template <typename G>
__device__ __forceinline__ void
from_bytes(float (&acc)[1][8][4], float scale, float bias, const BytesLayer &bl, unsigned n0,
           int wc, int lane)
{
#pragma unroll
  for (int nt = 0; nt < 8; nt++) {
    const unsigned n = n0 + wc * G::WN + nt * 8 + 2 * (lane % 4);
    const float2 sum = __ldg(reinterpret_cast<const float2 *>(bl.sums + n));
    const float2 e = __ldg(reinterpret_cast<const float2 *>(bl.scales + n));
#pragma unroll
    for (int half = 0; half < 2; half++) {
      acc[0][nt][2 * half] = fmaf(acc[0][nt][2 * half], scale * e.x, bias * sum.x);
      acc[0][nt][2 * half + 1] = fmaf(acc[0][nt][2 * half + 1], scale * e.y, bias * sum.y);
    }
  }
}
#endif

} // namespace pp_wide

#endif
