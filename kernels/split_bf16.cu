/* Near FP32's accuracy from BF16 tensor cores, for a first layer that reads a
 * frame's bytes. A byte u is an integer, and u − 128 (−128..127) is exact
 * in BF16. X = u·scale + bias, so
 *
 *   X·Wᵀ + b = (u − 128)·(scale·W)ᵀ + (b + (128·scale + bias)·Σ_k W),
 *
 * and scale·W (FP32, 24-bit mantissa) is exactly the sum of three BF16
 * pieces (8 bits each): hi, the nearest BF16; mid, the nearest to what is
 * left; lo, likewise. One BF16 GEMM with the pieces along K,
 * [U U U]·[W_hi W_mid W_lo]ᵀ, then multiplies exact values and adds them in
 * FP32 on the tensor cores. Two pieces (16 bits of W) give far more than
 * TF32's accuracy for TF32's precision. Each piece is padded to kp (a
 * multiple of 8) with zeros in both operands, for cuBLASLt's alignment.
 *
 * Centring the bytes keeps the products' sums small: the tensor cores add
 * in FP32 with truncation, so their error grows with the partial sums
 * (docs/PERFORMANCE.md has both errors). */
#include <cuda_bf16.h>

#include "gemm_mainloop.cuh"

namespace
{

/* Row r of W (n×k): its pieces at w_split[r][p·kp ...], and its bias. */
__global__ void
split_weights(const float *__restrict__ w, unsigned k, unsigned kp, unsigned pieces, float scale,
              float shift, const float *__restrict__ b, __nv_bfloat16 *__restrict__ w_split,
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
      const __nv_bfloat16 piece = __float2bfloat16_rn(left);
      w_split[((size_t) r * pieces + p) * kp + c] = piece;
      left -= __bfloat162float(piece); /* exact: the difference fits in FP32 */
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

/* Row r of X: its k bytes less 128, as BF16, once per piece. */
__global__ void
convert_bf16(const pp_cuda_a a, unsigned m, unsigned k, unsigned kp, unsigned pieces,
             __nv_bfloat16 *__restrict__ x)
{
  const unsigned row = blockIdx.x + blockIdx.y * 65535u;
  if (row >= m)
    return;
  const long long origin = pp::sample_origin(a, row);
  __nv_bfloat16 *dst = x + (size_t) row * pieces * kp;
  for (unsigned col = threadIdx.x * 4; col < kp; col += blockDim.x * 4) {
    /* Zeros past k: the padding meets zeros in W too, never NaNs. */
    const float4 v = pp::load_x4(a, origin, true, row, col, k, false);
    const __nv_bfloat162 lo = __floats2bfloat162_rn(v.x, v.y), hi = __floats2bfloat162_rn(v.z, v.w);
    uint2 packed;
    packed.x = *reinterpret_cast<const uint32_t *>(&lo);
    packed.y = *reinterpret_cast<const uint32_t *>(&hi);
    for (unsigned p = 0; p < pieces; p++)
      *reinterpret_cast<uint2 *>(dst + p * kp + col) = packed;
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
                                       128.0f * scale + bias, b,
                                       static_cast<__nv_bfloat16 *>(w_split), b_split);
  return cudaGetLastError();
}

extern "C" cudaError_t
pp_cuda_convert_bf16(cudaStream_t stream, const pp_cuda_a *a, uint32_t m, uint32_t k,
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
  convert_bf16<<<grid, 128, 0, stream>>>(raw, m, k, pp_cuda_split_kp(k), pieces,
                                         static_cast<__nv_bfloat16 *>(x));
  return cudaGetLastError();
}
