// SPDX-License-Identifier: LGPL-2.1-or-later
/* A last layer with few outputs, its bias and activation fused:
 * y[i][o] = act(h[i]·w1[o] + b1[o]). One warp per row of H; each lane keeps
 * a partial sum per output, so H is read once whatever O is. O = 1 is the
 * MatVec. */
#include "cuda_kernels.h"
#include "dtype.cuh"

namespace
{

constexpr int kWarpsPerBlock = 8;

template <int MAX_O, typename T>
__global__ void
__launch_bounds__(kWarpsPerBlock * 32)
    rowdot(const T *__restrict__ h, unsigned m, unsigned d, unsigned ldh,
           const float *__restrict__ w1, const float *__restrict__ b1, unsigned o, pp_act act,
           float *__restrict__ y)
{
  const unsigned lane = threadIdx.x % 32;
  const unsigned row = blockIdx.x * kWarpsPerBlock + threadIdx.x / 32;
  if (row >= m)
    return;
  const T *hrow = h + (size_t) row * ldh;
  float acc[MAX_O];
#pragma unroll
  for (int j = 0; j < MAX_O; j++)
    acc[j] = 0.f;

  /* 16-bit activations (precision=bf16, fp16) are read one at a time. */
  const bool vec = sizeof(T) == sizeof(float) && ldh % 4 == 0 && d % 4 == 0 &&
                   (reinterpret_cast<size_t>(h) & 15) == 0 &&
                   (reinterpret_cast<size_t>(w1) & 15) == 0;
  if (vec) {
    for (unsigned k = lane * 4; k < d; k += 32 * 4) {
      const float4 x = __ldg(reinterpret_cast<const float4 *>(hrow + k));
#pragma unroll
      for (int j = 0; j < MAX_O; j++) {
        if (j < (int) o) {
          const float4 w = __ldg(reinterpret_cast<const float4 *>(w1 + (size_t) j * d + k));
          acc[j] = fmaf(x.x, w.x, fmaf(x.y, w.y, fmaf(x.z, w.z, fmaf(x.w, w.w, acc[j]))));
        }
      }
    }
  } else {
    for (unsigned k = lane; k < d; k += 32) {
      const float x = pp::to_float(hrow[k]);
#pragma unroll
      for (int j = 0; j < MAX_O; j++)
        if (j < (int) o)
          acc[j] = fmaf(x, __ldg(w1 + (size_t) j * d + k), acc[j]);
    }
  }
#pragma unroll
  for (int j = 0; j < MAX_O; j++) {
    if (j < (int) o) {
#pragma unroll
      for (int offset = 16; offset > 0; offset /= 2)
        acc[j] += __shfl_xor_sync(0xffffffffu, acc[j], offset);
      if (lane == (unsigned) j % 32)
        y[(size_t) row * o + j] = pp_act_apply(act, acc[j] + (b1 ? __ldg(b1 + j) : 0.f));
    }
  }
}

template <int MAX_O, typename T>
cudaError_t
launch(cudaStream_t stream, const T *h, uint32_t m, uint32_t d, uint32_t ldh, const float *w1,
       const float *b1, uint32_t o, pp_act act, float *y)
{
  rowdot<MAX_O, T><<<(m + kWarpsPerBlock - 1) / kWarpsPerBlock, kWarpsPerBlock * 32, 0, stream>>>(
      h, m, d, ldh, w1, b1, o, act, y);
  return cudaGetLastError();
}

/* Accumulators are registers: sized to O. */
template <typename T>
cudaError_t
launch_for(cudaStream_t stream, const T *h, uint32_t m, uint32_t d, uint32_t ldh, const float *w1,
           const float *b1, uint32_t o, pp_act act, float *y)
{
  if (o == 1)
    return launch<1>(stream, h, m, d, ldh, w1, b1, o, act, y);
  if (o <= 4)
    return launch<4>(stream, h, m, d, ldh, w1, b1, o, act, y);
  if (o <= 8)
    return launch<8>(stream, h, m, d, ldh, w1, b1, o, act, y);
  if (o <= 16)
    return launch<16>(stream, h, m, d, ldh, w1, b1, o, act, y);
  return launch<32>(stream, h, m, d, ldh, w1, b1, o, act, y);
}

} // namespace

extern "C" cudaError_t
pp_cuda_rowdot(cudaStream_t stream, const void *h, pp_dtype type, uint32_t m, uint32_t d,
               uint32_t ldh, const float *w1, const float *b1, uint32_t o, pp_act act, float *y)
{
  if (!stream || !h || !w1 || !y || m == 0 || d == 0 || ldh < d || o == 0 || o > PP_ROWDOT_MAX_O ||
      type >= PP_N_DTYPES)
    return cudaErrorInvalidValue;
  cudaError_t err = cudaSuccess;
  PP_DTYPE_DISPATCH(
      type, T, err = launch_for(stream, static_cast<const T *>(h), m, d, ldh, w1, b1, o, act, y));
  return err;
}
