// SPDX-License-Identifier: LGPL-2.1-or-later
/* Near FP32's accuracy from 16- and 19-bit tensor cores, for a first
 * layer. A byte u is an integer, and u − 128 (−128..127) is exact in TF32
 * and in FP16. X = u·scale + bias, so
 *
 *   X·Wᵀ + b = (u − 128)·(scale·W)ᵀ + (b + (128·scale + bias)·Σ_k W),
 *
 * and scale·W (FP32, 24-bit significand) is, to within one part in 2²²,
 * the sum of two pieces of 11 significant bits each: hi, the nearest TF32
 * or FP16; lo, the nearest to what is left. One GEMM with the pieces
 * along K, [U U]·[W_hi W_lo]ᵀ, then multiplies exact values and adds them
 * in FP32 on the tensor cores. One piece is TF32's own precision, for
 * precision=tf32.
 *
 * Floats (YUV converted to RGB, or a tensor's) are not exact in either:
 * X is split too, and the blocks along K pair X's pieces with W's,
 * [X_hi X_hi X_lo]·[W_hi W_lo W_hi]ᵀ, leaving out only X_lo·W_loᵀ (below
 * 2⁻²² of the product): FP32's accuracy from three products. Each block
 * is padded to kp (a multiple of 8) with zeros in both operands, for
 * cuBLASLt's alignment.
 *
 * Exact FP32 (two pieces or more) of bytes and of YUV runs in FP16: its
 * products at twice TF32's rate, its X half the bytes to write and read.
 * FP16 has TF32's 11 bits but not its range, so W is scaled by the power
 * of two 2^e that puts the layer's largest |scale·w| in [2¹⁴, 2¹⁵), and
 * YUV's values (0..1) by 2¹⁵; the GEMM's alpha, 2^−e (and 2⁻¹⁵), undoes
 * both, exactly. A weight far below the largest loses its low piece's
 * last bits to FP16's subnormals, at most 2⁻²⁵·2^−e each, 2⁻⁴⁰ of the
 * largest weight. A tensor's floats have no bound and stay in TF32, as
 * does precision=tf32 (one piece), whose rounding the CPU backend models.
 *
 * Why not BF16: its 8 bits need three pieces where FP16 needs two. Both
 * 16-bit types run cuBLAS kernels in which racecheck reports hazards even
 * for a plain cublasLtMatmul, exact results and all, where its TF32
 * kernels show none (docs/PERFORMANCE.md, "cuBLAS's 16-bit kernels under
 * racecheck": how to tell them from ours).
 *
 * Centring the bytes keeps the products' sums small: the tensor cores add
 * in FP32 with truncation, so their error grows with the partial sums. */
#include <algorithm>
#include <math.h>
#include <string.h>

#include "dtype.cuh"
#include "gemm_mainloop.cuh"
#include "mma16.cuh"
#include "mma_tf32.cuh"

namespace
{

/* YUV's values (0..1) as FP16 takes them: times 2¹⁵, at most FP16's 2¹⁵. */
constexpr float YUV_SCALE = 32768.f;

/* v rounded to the nearest piece of type T: TF32 (10 stored significand
 * bits, halves away from zero) held in a float, or FP16 (to even). */
template <typename T>
__device__ float
nearest_piece(float v)
{
  if constexpr (sizeof(T) == 2)
    return __half2float(__float2half_rn(v));
  else
    return __uint_as_float(pp::nearest_tf32_bits(v));
}

__host__ __device__ constexpr unsigned
blocks_of(unsigned pieces, bool exact_x)
{
  return exact_x ? pieces : pieces * (pieces + 1) / 2;
}

/* Block b of the pieces along K: which piece of X (*xi) meets which of W
 * (*wj). Bytes: X whole, against each of W's pieces; floats: every pair
 * whose pieces add up to less than `pieces`, hi with hi first. */
__host__ __device__ inline void
block_pieces(unsigned b, unsigned pieces, bool exact_x, unsigned *xi, unsigned *wj)
{
  if (exact_x) {
    *xi = 0;
    *wj = b;
    return;
  }
  for (unsigned i = 0; i < pieces; i++) {
    if (b < pieces - i) {
      *xi = i;
      *wj = b;
      return;
    }
    b -= pieces - i;
  }
  *xi = *wj = 0;
}

/* *largest = the largest |w|·scale's bits (an unsigned compare orders
 * non-negative floats; a NaN lies above every finite value). */
__global__ void
largest_weight(const float *__restrict__ w, size_t count, float scale, unsigned *largest)
{
  unsigned most = 0;
  for (size_t i = blockIdx.x * (size_t) blockDim.x + threadIdx.x; i < count;
       i += (size_t) gridDim.x * blockDim.x)
    most = max(most, __float_as_uint(fabsf(w[i] * scale)));
  atomicMax(largest, most);
}

/* Row r of W (n×k): its pieces, of scale·w, at w_split[r][block·kp ...],
 * and its bias. */
template <typename T>
__global__ void
split_weights(const float *__restrict__ w, unsigned k, unsigned kp, unsigned pieces, bool exact_x,
              float scale, float shift, const float *__restrict__ b, T *__restrict__ w_split,
              float *__restrict__ b_split)
{
  const unsigned r = blockIdx.x;
  const unsigned blocks = blocks_of(pieces, exact_x);
  __shared__ double sums[256];
  double sum = 0;
  for (unsigned c = threadIdx.x; c < kp; c += blockDim.x) {
    const float v = c < k ? w[(size_t) r * k + c] : 0.f;
    if (c < k)
      sum += v;
    float piece[PP_SPLIT_MAX_PIECES], left = v * scale;
    for (unsigned p = 0; p < pieces; p++) {
      piece[p] = nearest_piece<T>(left);
      left -= piece[p]; /* exact: the difference fits in FP32 */
    }
    for (unsigned bl = 0; bl < blocks; bl++) {
      unsigned xi, wj;
      block_pieces(bl, pieces, exact_x, &xi, &wj);
      w_split[((size_t) r * blocks + bl) * kp + c] = pp::from_float<T>(piece[wj]);
    }
  }
  sums[threadIdx.x] = sum;
  __syncthreads();
  for (unsigned half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x < half)
      sums[threadIdx.x] += sums[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0)
    b_split[r] = (float) ((b ? (double) b[r] : 0.0) + (double) shift * sums[0]);
}

__device__ __forceinline__ void
store4(float *dst, float4 v)
{
  *reinterpret_cast<float4 *>(dst) = v;
}

__device__ __forceinline__ void
store4(__half *dst, float4 v)
{
  *reinterpret_cast<uint2 *>(dst) =
      make_uint2(pp::pack2<__half>(v.x, v.y), pp::pack2<__half>(v.z, v.w));
}

/* X into its blocks: bytes less 128 once per block (EXACT_X), floats, times
 * `scale`, as the piece each block takes. A thread a group of four
 * inputs, the groups of all rows in one range, so a row of a few hundred
 * inputs does not leave most of a block idle. PIECES and EXACT_X fixed
 * at compile time, each value's pieces made once and the blocks unrolled:
 * the kernel is bound by issuing instructions (YUV's pixels cost most),
 * and the loops' branches and counters at run time cost hd-nv12's split
 * 7 of its 74 µs. */
template <typename T, unsigned PIECES, bool EXACT_X>
__global__ void
convert_pieces(const pp_cuda_a a, unsigned m, unsigned k, unsigned kp, float scale,
               T *__restrict__ x)
{
  constexpr unsigned BLOCKS = blocks_of(PIECES, EXACT_X);
  const unsigned groups = kp / 4;
  const bool f32_vec = pp::f32_vectors(a);
  for (size_t i = blockIdx.x * (size_t) blockDim.x + threadIdx.x; i < (size_t) m * groups;
       i += (size_t) gridDim.x * blockDim.x) {
    unsigned row, col;
    /* Zeros past k: the padding meets zeros in W too, never NaNs. */
    const float4 v = pp::load_group(a, i, groups, k, f32_vec, &row, &col);
    float4 piece[EXACT_X ? 1 : PIECES];
    piece[0] = make_float4(v.x * scale, v.y * scale, v.z * scale, v.w * scale); /* exact: 2^n */
#pragma unroll
    for (unsigned p = 1; p < (EXACT_X ? 1 : PIECES); p++) {
      float *left = &piece[p - 1].x, *next = &piece[p].x;
#pragma unroll
      for (int j = 0; j < 4; j++) {
        const float hi = nearest_piece<T>(left[j]);
        next[j] = left[j] - hi; /* exact: the difference fits in FP32 */
        left[j] = hi;
      }
    }
    if constexpr (!EXACT_X) {
      float *last = &piece[PIECES - 1].x;
#pragma unroll
      for (int j = 0; j < 4; j++)
        last[j] = nearest_piece<T>(last[j]);
    }
    T *dst = x + (size_t) row * BLOCKS * kp + col;
#pragma unroll
    for (unsigned bl = 0; bl < BLOCKS; bl++) {
      unsigned xi, wj;
      block_pieces(bl, PIECES, EXACT_X, &xi, &wj);
      store4(dst + bl * kp, piece[EXACT_X ? 0 : xi]);
    }
  }
}

/* The kernel for `pieces` and whether X is exact, launched. */
template <typename T>
cudaError_t
launch_convert(cudaStream_t stream, unsigned grid, const pp_cuda_a &a, unsigned m, unsigned k,
               unsigned kp, unsigned pieces, bool exact_x, float scale, T *x)
{
  using convert_fn = void (*)(pp_cuda_a, unsigned, unsigned, unsigned, float, T *);
  /* Indexed by pieces − 1, then by whether X is exact. */
  static constexpr convert_fn kernels[][2] = {
    { convert_pieces<T, 1, false>, convert_pieces<T, 1, true> },
    { convert_pieces<T, 2, false>, convert_pieces<T, 2, true> },
    { convert_pieces<T, 3, false>, convert_pieces<T, 3, true> },
  };
  if (pieces < 1 || pieces > sizeof kernels / sizeof kernels[0])
    return cudaErrorInvalidValue;
  kernels[pieces - 1][exact_x]<<<grid, 256, 0, stream>>>(a, m, k, kp, scale, x);
  return cudaGetLastError();
}

} // namespace

extern "C" uint32_t
pp_cuda_split_kp(uint32_t k)
{
  return (k + 7u) & ~7u;
}

extern "C" bool
pp_cuda_split_exact_x(const pp_cuda_a *a)
{
  return a->kind == PP_A_U8_VEC4 || a->kind == PP_A_U8_GATHER;
}

extern "C" uint32_t
pp_cuda_split_blocks(uint32_t pieces, bool exact_x)
{
  return blocks_of(pieces, exact_x);
}

extern "C" pp_dtype
pp_cuda_split_type(const pp_cuda_a *a, uint32_t pieces)
{
  return pieces >= 2 && (pp_cuda_split_exact_x(a) || a->kind == PP_A_YUV) ? PP_DTYPE_F16
                                                                          : PP_DTYPE_F32;
}

extern "C" cudaError_t
pp_cuda_split_weights(cudaStream_t stream, const float *w, uint32_t n, uint32_t k, uint32_t pieces,
                      const pp_cuda_a *a, const float *b, void *w_split, float *b_split,
                      float *alpha)
{
  if (!stream || !w || !a || !w_split || !b_split || !alpha || n == 0 || k == 0 || pieces < 1 ||
      pieces > PP_SPLIT_MAX_PIECES)
    return cudaErrorInvalidValue;
  /* Bytes: the frame's scale folded into W, its centring into the bias. */
  const bool exact_x = pp_cuda_split_exact_x(a);
  float scale = exact_x ? a->scale : 1.0f;
  const float shift = exact_x ? 128.0f * a->scale + a->bias : 0;
  const unsigned kp = pp_cuda_split_kp(k);
  *alpha = 1.0f;
  if (pp_cuda_split_type(a, pieces) == PP_DTYPE_F32) {
    split_weights<float><<<n, 256, 0, stream>>>(w, k, kp, pieces, exact_x, scale, shift, b,
                                                static_cast<float *>(w_split), b_split);
    return cudaGetLastError();
  }
  /* FP16: the layer's largest weight sets its scale, so this waits for it
   * (b_split holds it until the pieces' kernel writes the biases). */
  unsigned *largest = reinterpret_cast<unsigned *>(b_split), bits = 0;
  const size_t count = (size_t) n * k;
  cudaError_t err = cudaMemsetAsync(largest, 0, sizeof *largest, stream);
  if (err != cudaSuccess)
    return err;
  largest_weight<<<(unsigned) std::min<size_t>((count + 255) / 256, 1024), 256, 0, stream>>>(
      w, count, scale, largest);
  if ((err = cudaGetLastError()) != cudaSuccess ||
      (err = cudaMemcpyAsync(&bits, largest, sizeof bits, cudaMemcpyDeviceToHost, stream)) !=
          cudaSuccess ||
      (err = cudaStreamSynchronize(stream)) != cudaSuccess)
    return err;
  float most;
  memcpy(&most, &bits, sizeof most);
  int exponent = 0; /* most = f·2^exponent, f in [0.5, 1) */
  if (most > 0.f && isfinite(most))
    frexpf(most, &exponent);
  /* 2^(15 − exponent) brings the largest into [2¹⁴, 2¹⁵); alpha, its
   * inverse with YUV's, stays a normal float. */
  const float x_scale = exact_x ? 1.f : YUV_SCALE;
  const int e = std::min(15 - exponent, 126 - 15);
  scale = ldexpf(scale, e);
  *alpha = ldexpf(1.f / x_scale, -e);
  split_weights<__half><<<n, 256, 0, stream>>>(w, k, kp, pieces, exact_x, scale, shift, b,
                                               static_cast<__half *>(w_split), b_split);
  return cudaGetLastError();
}

extern "C" cudaError_t
pp_cuda_split_convert(cudaStream_t stream, const pp_cuda_a *a, uint32_t m, uint32_t k,
                      uint32_t pieces, void *x)
{
  if (!stream || !a || !x || m == 0 || k == 0 || pieces < 1 || pieces > PP_SPLIT_MAX_PIECES ||
      (a->kind != PP_A_F32 && !a->k_offset))
    return cudaErrorInvalidValue;
  /* Bytes: the raw byte less 128, whatever the layout's own scale and bias. */
  const bool exact_x = pp_cuda_split_exact_x(a);
  pp_cuda_a raw = *a;
  if (exact_x) {
    raw.scale = 1.0f;
    raw.bias = -128.0f;
  }
  const unsigned kp = pp_cuda_split_kp(k);
  const size_t groups = (size_t) m * (kp / 4);
  const unsigned grid = (unsigned) std::min((groups + 255) / 256, (size_t) 65535 * 8);
  if (pp_cuda_split_type(a, pieces) == PP_DTYPE_F32)
    return launch_convert(stream, grid, raw, m, k, kp, pieces, exact_x, 1.f,
                          static_cast<float *>(x));
  return launch_convert(stream, grid, raw, m, k, kp, pieces, exact_x, exact_x ? 1.f : YUV_SCALE,
                        static_cast<__half *>(x));
}
