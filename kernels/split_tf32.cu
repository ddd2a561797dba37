// SPDX-License-Identifier: LGPL-2.1-or-later
/* Near FP32's accuracy from TF32 tensor cores, for a first layer that
 * reads a frame's bytes. A byte u is an integer, and u − 128 (−128..127) is
 * exact in TF32. X = u·scale + bias, so
 *
 *   X·Wᵀ + b = (u − 128)·(scale·W)ᵀ + (b + (128·scale + bias)·Σ_k W),
 *
 * and scale·W (FP32, 24-bit significand) is, to within one part in 2²³
 * (one FP32 ulp), the sum of two TF32 pieces (11 significant bits each):
 * hi, the nearest TF32; lo, the nearest to what is left. One TF32 GEMM
 * with the pieces along K, [U U]·[W_hi W_lo]ᵀ, then multiplies exact
 * values and adds them in FP32 on the tensor cores. One piece is TF32's
 * own precision, for precision=tf32. Each piece is padded to kp (a
 * multiple of 8) with zeros in both operands, for cuBLASLt's alignment.
 *
 * Why TF32 and not BF16: three BF16 pieces were faster, but racecheck
 * reports shared-memory hazards inside cuBLAS's BF16 kernels
 * (nvjet_sm90_tss_*) even for a plain cublasLtMatmul, and none in its TF32
 * kernels on the same shapes (docs/PERFORMANCE.md, "cuBLAS's BF16 kernels under racecheck").
 *
 * Centring the bytes keeps the products' sums small: the tensor cores add
 * in FP32 with truncation, so their error grows with the partial sums. */
#include "gemm_mainloop.cuh"

namespace
{

/* v rounded to the nearest TF32 (10 stored significand bits), halves away
 * from zero: adding half of the dropped part to the bits carries into the
 * exponent when it must. */
__device__ float
nearest_tf32(float v)
{
  return __uint_as_float((__float_as_uint(v) + 0x1000u) & 0xffffe000u);
}

/* Row r of W (n×k): its pieces at w_split[r][p·kp ...], and its bias. */
__global__ void
split_weights(const float *__restrict__ w, unsigned k, unsigned kp, unsigned pieces, float scale,
              float shift, const float *__restrict__ b, float *__restrict__ w_split,
              float *__restrict__ b_split)
{
  const unsigned r = blockIdx.x;
  __shared__ double sums[256];
  double sum = 0;
  for (unsigned c = threadIdx.x; c < kp; c += blockDim.x) {
    const float v = c < k ? w[(size_t) r * k + c] : 0.f;
    if (c < k)
      sum += v;
    float left = v * scale;
    for (unsigned p = 0; p < pieces; p++) {
      const float piece = nearest_tf32(left);
      w_split[((size_t) r * pieces + p) * kp + c] = piece;
      left -= piece; /* exact: the difference fits in FP32 */
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

/* Row r of X: its k bytes less 128, as floats, once per piece. */
__global__ void
convert_pieces(const pp_cuda_a a, unsigned m, unsigned k, unsigned kp, unsigned pieces,
               float *__restrict__ x)
{
  const unsigned row = blockIdx.x + blockIdx.y * 65535u;
  if (row >= m)
    return;
  const long long origin = pp::sample_origin(a, row);
  float *dst = x + (size_t) row * pieces * kp;
  for (unsigned col = threadIdx.x * 4; col < kp; col += blockDim.x * 4) {
    /* Zeros past k: the padding meets zeros in W too, never NaNs. */
    const float4 v = pp::load_x4(a, origin, true, row, col, k, false);
    for (unsigned p = 0; p < pieces; p++)
      *reinterpret_cast<float4 *>(dst + p * kp + col) = v;
  }
}

} // namespace

extern "C" uint32_t
pp_cuda_split_kp(uint32_t k)
{
  return (k + 7u) & ~7u;
}

extern "C" cudaError_t
pp_cuda_split_weights(cudaStream_t stream, const float *w, uint32_t n, uint32_t k, uint32_t pieces,
                      float scale, float bias, const float *b, void *w_split, float *b_split)
{
  if (!stream || !w || !w_split || !b_split || n == 0 || k == 0 || pieces < 1 ||
      pieces > PP_SPLIT_MAX_PIECES)
    return cudaErrorInvalidValue;
  split_weights<<<n, 256, 0, stream>>>(w, k, pp_cuda_split_kp(k), pieces, scale,
                                       128.0f * scale + bias, b, static_cast<float *>(w_split),
                                       b_split);
  return cudaGetLastError();
}

extern "C" cudaError_t
pp_cuda_split_convert(cudaStream_t stream, const pp_cuda_a *a, uint32_t m, uint32_t k,
                      uint32_t pieces, void *x)
{
  if (!stream || !a || !x || m == 0 || k == 0 || pieces < 1 || pieces > PP_SPLIT_MAX_PIECES ||
      (a->kind != PP_A_U8_VEC4 && a->kind != PP_A_U8_GATHER) || !a->k_offset)
    return cudaErrorInvalidValue;
  /* The raw byte less 128, whatever the layout's own scale and bias. */
  pp_cuda_a raw = *a;
  raw.scale = 1.0f;
  raw.bias = -128.0f;
  const dim3 grid(m < 65535 ? m : 65535, (m + 65534) / 65535);
  convert_pieces<<<grid, 128, 0, stream>>>(raw, m, k, pp_cuda_split_kp(k), pieces,
                                           static_cast<float *>(x));
  return cudaGetLastError();
}
