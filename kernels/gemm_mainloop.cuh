// SPDX-License-Identifier: LGPL-2.1-or-later
/* The FP32 SIMT GEMM mainloop shared by gemm.cu and mlp_fused.cu:
 * acc = X[m0:m0+BM, :] · Wt[:, n0:n0+BN], with X gathered through pp_cuda_a.
 *
 * (BM/8)·(BN/8) threads, each owning an 8×8 block of the tile split 2×(4×4) (rows
 * ty*4+i and BM/2+ty*4+i, columns likewise) so shared-memory reads are
 * float4 broadcasts or contiguous, never bank conflicts. K advances in
 * slices of BK = 8, double-buffered: the next slice's global loads are in
 * flight while the current one is multiplied. */
#ifndef PP_GEMM_MAINLOOP_CUH
#define PP_GEMM_MAINLOOP_CUH

#include "cuda_kernels.h"

namespace pp
{

constexpr int kBK = 8;

template <int BM, int BN> struct Tile {
  static constexpr int COLS = BN / 8; /* threads across a row of the tile */
  static constexpr int ROWS = BM / 8;
  static constexpr int THREADS = COLS * ROWS; /* 8×8 outputs each */
  static_assert(COLS <= 32 && 32 % COLS == 0, "a row group sits inside one warp");
  static_assert(THREADS % 32 == 0 && THREADS <= 256, "whole warps");
  static constexpr int A_PAD = 4; /* breaks bank conflicts of the transposed stores */
  static constexpr int A_GROUPS = BM * kBK / 4;
  static constexpr int B_GROUPS = BN * kBK / 4;
  static constexpr int A_PER_THREAD = (A_GROUPS + THREADS - 1) / THREADS;
  static constexpr int B_PER_THREAD = (B_GROUPS + THREADS - 1) / THREADS;

  struct Shared {
    float a[2][kBK][BM + A_PAD]; /* X slice, transposed: a[k][row] */
    float b[2][kBK][BN];         /* Wt slice: b[k][col] */
  };
};

/* Byte offset of sample m's origin in the frame; for YUV its first pixel,
 * x in the low 32 bits and y in the high. */
__device__ __forceinline__ long long
sample_origin(const pp_cuda_a &a, unsigned m)
{
  const unsigned row = a.per_row == 1 ? m : m / a.per_row;
  const unsigned col = m - row * a.per_row;
  if (a.kind == PP_A_YUV)
    return (long long) (row * a.row_step) << 32 | (col * a.col_step);
  return (long long) row * a.row_step + (long long) col * a.col_step;
}

/* Inputs k..k+3 (k < k_end; zero from k_end) of the YUV sample whose first
 * pixel is `origin`. Channels of a pixel are consecutive inputs, so four
 * inputs touch at most two pixels, the first input's and the last's: both
 * are computed, each once, from table entries read together, so all of
 * both pixels' samples are in flight at once (deciding per input whether
 * its pixel is new waited for each entry, and each pixel's samples, in
 * turn). */
__device__ __forceinline__ float4
load_yuv4(const pp_cuda_a &a, long long origin, unsigned k, unsigned k_end)
{
  const uint8_t *frame = static_cast<const uint8_t *>(a.data);
  const unsigned last = min(k + 3, k_end - 1);
  int32_t e[4];
#pragma unroll
  for (int j = 0; j < 4; j++)
    e[j] = __ldg(a.k_offset + min(k + j, last));
  float r0, g0, b0, r1, g1, b1;
  const unsigned x = (unsigned) origin, y = (unsigned) (origin >> 32);
  pp_yuv_rgb(a.yuv, frame, x + PP_YUV_DX(e[0]), y + PP_YUV_DY(e[0]), &r0, &g0, &b0);
  pp_yuv_rgb(a.yuv, frame, x + PP_YUV_DX(e[3]), y + PP_YUV_DY(e[3]), &r1, &g1, &b1);
  float v[4];
#pragma unroll
  for (int j = 0; j < 4; j++) {
    const bool first = (((uint32_t) e[j] ^ (uint32_t) e[0]) & 0x3fffffffu) == 0;
    const uint32_t c = PP_YUV_C(e[j]);
    const float r = first ? r0 : r1, g = first ? g0 : g1, b = first ? b0 : b1;
    v[j] = k + j < k_end ? (c == 0 ? r : c == 1 ? g : b) : 0.f;
  }
  return make_float4(v[0], v[1], v[2], v[3]);
}

/* Whether X's rows of floats can be read 16 bytes at a time. */
__device__ __forceinline__ bool
f32_vectors(const pp_cuda_a &a)
{
  return a.kind == PP_A_F32 && a.ld % 4 == 0 && (reinterpret_cast<size_t>(a.data) & 15) == 0;
}

/* Four consecutive inputs X[m][k..k+3] (zero past k_end or for a missing row). */
__device__ __forceinline__ float4
load_x4(const pp_cuda_a &a, long long origin, bool row_ok, unsigned m, unsigned k, unsigned k_end,
        bool f32_vec)
{
  float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
  if (!row_ok || k >= k_end)
    return v;
  if (a.kind == PP_A_F32) {
    const float *row = static_cast<const float *>(a.data) + (size_t) m * a.ld;
    if (f32_vec && k + 3 < k_end)
      return __ldg(reinterpret_cast<const float4 *>(row + k));
    v.x = __ldg(row + k);
    if (k + 1 < k_end)
      v.y = __ldg(row + k + 1);
    if (k + 2 < k_end)
      v.z = __ldg(row + k + 2);
    if (k + 3 < k_end)
      v.w = __ldg(row + k + 3);
    return v;
  }
  if (a.kind == PP_A_YUV)
    return load_yuv4(a, origin, k, k_end);
  const unsigned char *base = static_cast<const unsigned char *>(a.data) + origin;
  const float scale = a.scale, bias = a.bias;
  if (a.kind == PP_A_U8_VEC4) {
    const uchar4 p = __ldg(reinterpret_cast<const uchar4 *>(base + __ldg(a.k_offset + k)));
    return make_float4(fmaf(p.x, scale, bias), fmaf(p.y, scale, bias), fmaf(p.z, scale, bias),
                       fmaf(p.w, scale, bias));
  }
  v.x = fmaf(__ldg(base + __ldg(a.k_offset + k)), scale, bias);
  if (k + 1 < k_end)
    v.y = fmaf(__ldg(base + __ldg(a.k_offset + k + 1)), scale, bias);
  if (k + 2 < k_end)
    v.z = fmaf(__ldg(base + __ldg(a.k_offset + k + 2)), scale, bias);
  if (k + 3 < k_end)
    v.w = fmaf(__ldg(base + __ldg(a.k_offset + k + 3)), scale, bias);
  return v;
}

/* Bytes whose groups of four inputs are words (PP_A_U8_VEC4), for the
 * kernels that keep several loads in flight: the word of inputs k..k+3 at
 * `at` bytes into the frame, loaded as a word (a uchar4's bytes are
 * unpacked as it arrives, which waits for it before the next load goes
 * out), and its four values as load_x4 gives them. */
__device__ __forceinline__ uint32_t
load_word(const pp_cuda_a &a, long long at)
{
  return __ldg(reinterpret_cast<const uint32_t *>(static_cast<const unsigned char *>(a.data) + at));
}

__device__ __forceinline__ float4
word_values(const pp_cuda_a &a, uint32_t w)
{
  const float scale = a.scale, bias = a.bias;
  return make_float4(
      fmaf((float) (w & 0xffu), scale, bias), fmaf((float) (w >> 8 & 0xffu), scale, bias),
      fmaf((float) (w >> 16 & 0xffu), scale, bias), fmaf((float) (w >> 24), scale, bias));
}

/* Group i of four inputs, `groups` a row (the conversions' way over X: a
 * thread a group, every row's groups in one range): *row and *col where
 * it starts, its values as load_x4 reads them. */
__device__ __forceinline__ float4
load_group(const pp_cuda_a &a, size_t i, unsigned groups, unsigned k, bool f32_vec, unsigned *row,
           unsigned *col)
{
  *row = (unsigned) (i / groups);
  *col = (unsigned) (i % groups) * 4;
  const long long origin = a.kind == PP_A_F32 ? 0 : sample_origin(a, *row);
  return load_x4(a, origin, true, *row, *col, k, f32_vec);
}

template <int BM, int BN> struct Mainloop {
  using T = Tile<BM, BN>;
  const pp_cuda_a a; /* a copy: small, and kept in registers */
  const float *wt;
  unsigned m, k, ldw, m0, n0;
  bool f32_vec;
  /* Per group this thread loads: its row's origin, and whether the row exists. */
  long long origin[T::A_PER_THREAD];
  float4 a_regs[T::A_PER_THREAD];
  float4 b_regs[T::B_PER_THREAD];

  __device__ Mainloop(const pp_cuda_a &a_, const float *wt_, unsigned m_, unsigned k_,
                      unsigned ldw_, unsigned m0_, unsigned n0_)
      : a(a_), wt(wt_), m(m_), k(k_), ldw(ldw_), m0(m0_), n0(n0_)
  {
    f32_vec = f32_vectors(a);
#pragma unroll
    for (int i = 0; i < T::A_PER_THREAD; i++) {
      const int g = threadIdx.x + i * T::THREADS;
      const unsigned row = m0 + g / (kBK / 4);
      origin[i] = (g < T::A_GROUPS && row < m && a.kind != PP_A_F32) ? sample_origin(a, row) : 0;
    }
  }

  __device__ void fetch(unsigned k0)
  {
#pragma unroll
    for (int i = 0; i < T::A_PER_THREAD; i++) {
      const int g = threadIdx.x + i * T::THREADS;
      const unsigned row = m0 + g / (kBK / 4), kk = k0 + (g % (kBK / 4)) * 4;
      a_regs[i] = load_x4(a, origin[i], g < T::A_GROUPS && row < m, row, kk, k, f32_vec);
    }
#pragma unroll
    for (int i = 0; i < T::B_PER_THREAD; i++) {
      const int g = threadIdx.x + i * T::THREADS;
      const unsigned kk = k0 + g / (BN / 4), col = n0 + (g % (BN / 4)) * 4;
      b_regs[i] = (g < T::B_GROUPS && kk < k && col < ldw)
                      ? __ldg(reinterpret_cast<const float4 *>(wt + (size_t) kk * ldw + col))
                      : make_float4(0.f, 0.f, 0.f, 0.f);
    }
  }

  __device__ void store(typename T::Shared &s, int buf)
  {
#pragma unroll
    for (int i = 0; i < T::A_PER_THREAD; i++) {
      const int g = threadIdx.x + i * T::THREADS;
      if (g < T::A_GROUPS) {
        const int row = g / (kBK / 4), kq = (g % (kBK / 4)) * 4;
        s.a[buf][kq + 0][row] = a_regs[i].x;
        s.a[buf][kq + 1][row] = a_regs[i].y;
        s.a[buf][kq + 2][row] = a_regs[i].z;
        s.a[buf][kq + 3][row] = a_regs[i].w;
      }
    }
#pragma unroll
    for (int i = 0; i < T::B_PER_THREAD; i++) {
      const int g = threadIdx.x + i * T::THREADS;
      if (g < T::B_GROUPS)
        *reinterpret_cast<float4 *>(&s.b[buf][g / (BN / 4)][(g % (BN / 4)) * 4]) = b_regs[i];
    }
  }

  /* acc[r][c]: r = h*4+i is row h*BM/2 + ty*4 + i, c likewise for columns. */
  __device__ void run(typename T::Shared &s, float (&acc)[8][8])
  {
    const int tx = threadIdx.x % T::COLS, ty = threadIdx.x / T::COLS;
#pragma unroll
    for (int r = 0; r < 8; r++)
#pragma unroll
      for (int c = 0; c < 8; c++)
        acc[r][c] = 0.f;

    const unsigned tiles = (k + kBK - 1) / kBK;
    fetch(0);
    store(s, 0);
    __syncthreads();
    for (unsigned t = 0; t < tiles; t++) {
      const int cur = t & 1;
      if (t + 1 < tiles)
        fetch((t + 1) * kBK);
#pragma unroll
      for (int kk = 0; kk < kBK; kk++) {
        const float4 a0 = *reinterpret_cast<const float4 *>(&s.a[cur][kk][ty * 4]);
        const float4 a1 = *reinterpret_cast<const float4 *>(&s.a[cur][kk][BM / 2 + ty * 4]);
        const float4 b0 = *reinterpret_cast<const float4 *>(&s.b[cur][kk][tx * 4]);
        const float4 b1 = *reinterpret_cast<const float4 *>(&s.b[cur][kk][BN / 2 + tx * 4]);
        const float av[8] = { a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w };
        const float bv[8] = { b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w };
#pragma unroll
        for (int r = 0; r < 8; r++)
#pragma unroll
          for (int c = 0; c < 8; c++)
            acc[r][c] = fmaf(av[r], bv[c], acc[r][c]);
      }
      if (t + 1 < tiles)
        store(s, cur ^ 1);
      __syncthreads();
    }
  }

  /* Tile row and column of accumulator index r (or c). */
  __device__ static int row_of(int r)
  {
    return (r / 4) * (BM / 2) + (threadIdx.x / T::COLS) * 4 + r % 4;
  }
  __device__ static int col_of(int c)
  {
    return (c / 4) * (BN / 2) + (threadIdx.x % T::COLS) * 4 + c % 4;
  }
};

} // namespace pp

#endif
