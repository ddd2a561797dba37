// SPDX-License-Identifier: LGPL-2.1-or-later
/* Near FP32's accuracy from TF32 tensor cores, for a first layer. A byte u
 * is an integer, and u − 128 (−128..127) is exact in TF32.
 * X = u·scale + bias, so
 *
 *   X·Wᵀ + b = (u − 128)·(scale·W)ᵀ + (b + (128·scale + bias)·Σ_k W),
 *
 * and scale·W (FP32, 24-bit significand) is, to within one part in 2²³
 * (one FP32 ulp), the sum of two TF32 pieces (11 significant bits each):
 * hi, the nearest TF32; lo, the nearest to what is left. One TF32 GEMM
 * with the pieces along K, [U U]·[W_hi W_lo]ᵀ, then multiplies exact
 * values and adds them in FP32 on the tensor cores. One piece is TF32's
 * own precision, for precision=tf32.
 *
 * Floats (YUV converted to RGB, or a tensor's) are not exact in TF32:
 * X is split too, and the blocks along K pair X's pieces with W's,
 * [X_hi X_hi X_lo]·[W_hi W_lo W_hi]ᵀ, leaving out only X_lo·W_loᵀ (below
 * 2⁻²² of the product): FP32's accuracy from three TF32 products. Each
 * block is padded to kp (a multiple of 8) with zeros in both operands, for
 * cuBLASLt's alignment.
 *
 * Why TF32 and not BF16: three BF16 pieces were faster, but racecheck
 * reports shared-memory hazards inside cuBLAS's BF16 kernels
 * (nvjet_sm90_tss_*) even for a plain cublasLtMatmul, and none in its TF32
 * kernels on the same shapes (docs/PERFORMANCE.md, "cuBLAS's BF16 kernels under racecheck").
 *
 * Centring the bytes keeps the products' sums small: the tensor cores add
 * in FP32 with truncation, so their error grows with the partial sums. */
#include <algorithm>

#include "gemm_mainloop.cuh"
#include "mma_tf32.cuh"

namespace
{

/* v rounded to the nearest TF32 (10 stored significand bits), halves away
 * from zero. */
__device__ float
nearest_tf32(float v)
{
  return __uint_as_float(pp::nearest_tf32_bits(v));
}

__host__ __device__ inline unsigned
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

/* Row r of W (n×k): its pieces at w_split[r][block·kp ...], and its bias. */
__global__ void
split_weights(const float *__restrict__ w, unsigned k, unsigned kp, unsigned pieces, bool exact_x,
              float scale, float shift, const float *__restrict__ b, float *__restrict__ w_split,
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
      piece[p] = nearest_tf32(left);
      left -= piece[p]; /* exact: the difference fits in FP32 */
    }
    for (unsigned bl = 0; bl < blocks; bl++) {
      unsigned xi, wj;
      block_pieces(bl, pieces, exact_x, &xi, &wj);
      w_split[((size_t) r * blocks + bl) * kp + c] = piece[wj];
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

/* Piece p of each of v's four values. */
__device__ __forceinline__ float4
piece_of(float4 v, unsigned p)
{
  float *e = &v.x;
  for (int j = 0; j < 4; j++) {
    float left = e[j];
    for (unsigned q = 0; q < p; q++)
      left -= nearest_tf32(left);
    e[j] = nearest_tf32(left);
  }
  return v;
}

/* X into its blocks: bytes less 128 once per block (exact_x), floats as
 * the piece each block takes. A thread a group of four inputs, the groups
 * of all rows in one range, so a row of a few hundred inputs does not
 * leave most of a block idle. */
__global__ void
convert_pieces(const pp_cuda_a a, unsigned m, unsigned k, unsigned kp, unsigned pieces,
               bool exact_x, float *__restrict__ x)
{
  const unsigned blocks = blocks_of(pieces, exact_x), groups = kp / 4;
  const bool f32_vec = pp::f32_vectors(a);
  for (size_t i = blockIdx.x * (size_t) blockDim.x + threadIdx.x; i < (size_t) m * groups;
       i += (size_t) gridDim.x * blockDim.x) {
    unsigned row, col;
    /* Zeros past k: the padding meets zeros in W too, never NaNs. */
    const float4 v = pp::load_group(a, i, groups, k, f32_vec, &row, &col);
    float *dst = x + (size_t) row * blocks * kp + col;
    for (unsigned bl = 0; bl < blocks; bl++) {
      unsigned xi, wj;
      block_pieces(bl, pieces, exact_x, &xi, &wj);
      *reinterpret_cast<float4 *>(dst + bl * kp) = exact_x ? v : piece_of(v, xi);
    }
  }
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

extern "C" cudaError_t
pp_cuda_split_weights(cudaStream_t stream, const float *w, uint32_t n, uint32_t k, uint32_t pieces,
                      const pp_cuda_a *a, const float *b, void *w_split, float *b_split)
{
  if (!stream || !w || !a || !w_split || !b_split || n == 0 || k == 0 || pieces < 1 ||
      pieces > PP_SPLIT_MAX_PIECES)
    return cudaErrorInvalidValue;
  /* Bytes: the frame's scale folded into W, its centring into the bias. */
  const bool exact_x = pp_cuda_split_exact_x(a);
  const float scale = exact_x ? a->scale : 1.0f, shift = exact_x ? 128.0f * a->scale + a->bias : 0;
  split_weights<<<n, 256, 0, stream>>>(w, k, pp_cuda_split_kp(k), pieces, exact_x, scale, shift, b,
                                       static_cast<float *>(w_split), b_split);
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
  const size_t groups = (size_t) m * (pp_cuda_split_kp(k) / 4);
  const unsigned grid = (unsigned) std::min((groups + 255) / 256, (size_t) 65535 * 8);
  convert_pieces<<<grid, 256, 0, stream>>>(raw, m, k, pp_cuda_split_kp(k), pieces, exact_x,
                                           static_cast<float *>(x));
  return cudaGetLastError();
}
