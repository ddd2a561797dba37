// SPDX-License-Identifier: LGPL-2.1-or-later
/* A block's rows of the frame in shared memory, for the kernels that
 * keep a model's activations on chip (mlp_wide.cu, mlp_warp.cu): read
 * once through pp_cuda_a, converted in the load and rounded to a 16-bit
 * type as pp_cuda_convert rounds it (floats kept as they are, or rounded
 * to TF32 for TF32 products), stored in swizzled rows (place). */
#ifndef PP_FRAME_ROWS_CUH
#define PP_FRAME_ROWS_CUH

#include "gemm_mainloop.cuh"
#include "mma16.cuh"
#include "mma_tf32.cuh"
#include "wide_layout.cuh"

namespace pp_wide
{

/* Values into shared rows of T: rounded to a 16-bit T; floats as they
 * are, or rounded to TF32 where TF32 (the products then read them as they
 * lie). */
template <bool TF32>
__device__ __forceinline__ float
kept(float v)
{
  return TF32 ? __uint_as_float(pp::to_tf32(v)) : v;
}

/* Two values at p, side by side. */
template <bool TF32, typename T>
__device__ __forceinline__ void
put2(T *p, float a, float b)
{
  if constexpr (sizeof(T) == 4)
    *reinterpret_cast<float2 *>(p) = make_float2(kept<TF32>(a), kept<TF32>(b));
  else
    *reinterpret_cast<uint32_t *>(p) = pp::pack2<T>(a, b);
}

/* Four values at p (zeros where !keep): 8 bytes of a 16-bit type, a whole
 * 16-byte chunk of floats. */
template <bool TF32, typename T>
__device__ __forceinline__ void
put4(T *p, float4 v, bool keep)
{
  if constexpr (sizeof(T) == 4)
    *reinterpret_cast<float4 *>(p) =
        keep ? make_float4(kept<TF32>(v.x), kept<TF32>(v.y), kept<TF32>(v.z), kept<TF32>(v.w))
             : make_float4(0.f, 0.f, 0.f, 0.f);
  else
    *reinterpret_cast<uint2 *>(p) =
        keep ? make_uint2(pp::pack2<T>(v.x, v.y), pp::pack2<T>(v.z, v.w)) : make_uint2(0, 0);
}

/* Bytes whose groups of four inputs are words (PP_A_U8_VEC4: video in
 * patches or rows). Each thread keeps one group of a row, its offset read
 * once, and takes every per_pass-th row (a row's groups fit the threads:
 * ld ≤ 4 × THREADS), so no index is divided a load. Each load is one word,
 * held as a word until it is converted and stored, and every load is
 * made, from the frame's first word where there is nothing to read, so no
 * branch or byte unpacking sits between a thread's loads: all BYTE_BATCH
 * are in flight at once. (Loaded as uchar4, each load's bytes were
 * unpacked as it came, which waited for it before the next was sent.) The
 * values are load_x4's. */
template <int ROWS, int THREADS, bool TF32, bool PANELS, typename T>
__device__ __forceinline__ void
load_byte_rows(const pp_cuda_a &x, unsigned m, unsigned k, unsigned m0, T *h, uint32_t ld)
{
  const unsigned groups = ld / 4, per_pass = THREADS / groups, col = threadIdx.x % groups * 4;
  if (threadIdx.x >= per_pass * groups)
    return;
  const long long offset = col < k ? __ldg(x.k_offset + col) : 0;
  constexpr int BYTE_BATCH = 16;
  for (unsigned r0 = threadIdx.x / groups; r0 < ROWS; r0 += BYTE_BATCH * per_pass) {
    uint32_t word[BYTE_BATCH];
    unsigned in = 0; /* bit j: load j read the frame */
#pragma unroll
    for (int j = 0; j < BYTE_BATCH; j++) {
      const unsigned row = m0 + r0 + j * per_pass;
      const bool ok = r0 + j * per_pass < ROWS && row < m && col < k;
      word[j] = pp::load_word(x, ok ? pp::sample_origin(x, row) + offset : 0);
      in |= (unsigned) ok << j;
    }
#pragma unroll
    for (int j = 0; j < BYTE_BATCH; j++) {
      const unsigned r = r0 + j * per_pass;
      if (r >= ROWS)
        break;
      put4<TF32>(h + place<T, PANELS, ROWS>(r, col, ld), pp::word_values(x, word[j]), in >> j & 1u);
    }
  }
}

/* The frame's ROWS rows from m0 into h (rows ld wide, a multiple of 64,
 * in panels or one after another: place) as T (floats rounded to TF32
 * where TF32), zero past k up to ld and for rows past m, by THREADS
 * threads. Loads go out in batches, each thread's all in flight before
 * any is stored. */
template <int ROWS, int THREADS, bool TF32 = false, bool PANELS = false, typename T>
__device__ __forceinline__ void
load_rows(const pp_cuda_a &x, unsigned m, unsigned k, unsigned m0, T *h, uint32_t ld)
{
  if (x.kind == PP_A_U8_VEC4 && ld / 4 <= THREADS)
    return load_byte_rows<ROWS, THREADS, TF32, PANELS>(x, m, k, m0, h, ld);
  const bool f32_vec = pp::f32_vectors(x);
  const unsigned groups = ld / 4, total = ROWS * groups;
  constexpr int BATCH = 8;
  for (unsigned i0 = 0; i0 < total; i0 += BATCH * THREADS) {
    float4 v[BATCH];
#pragma unroll
    for (int j = 0; j < BATCH; j++) {
      const unsigned i = i0 + j * THREADS + threadIdx.x, r = i / groups, row = m0 + r;
      const bool ok = i < total && row < m;
      const long long origin = x.kind == PP_A_F32 || !ok ? 0 : pp::sample_origin(x, row);
      v[j] = pp::load_x4(x, origin, ok, row, (i % groups) * 4, k, f32_vec);
    }
#pragma unroll
    for (int j = 0; j < BATCH; j++) {
      const unsigned i = i0 + j * THREADS + threadIdx.x, r = i / groups;
      if (i >= total)
        break;
      put4<TF32>(h + place<T, PANELS, ROWS>(r, (i % groups) * 4, ld), v[j], true);
    }
  }
}

} // namespace pp_wide

#endif
