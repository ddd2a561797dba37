// SPDX-License-Identifier: LGPL-2.1-or-later
/* GEMM with bias and activation: C = act(X · Wt + bias), X gathered from
 * frame bytes or floats (gemm_mainloop.cuh). Every layer of the MLP but a
 * last one narrow enough for the row-dot kernel. */
#include "activation.cuh"
#include "gemm_mainloop.cuh"

namespace
{

template <int BM, int BN, int A>
/* Two blocks per SM for latency hiding, as in mlp_fused.cu. */
__global__ void
__launch_bounds__(pp::Tile<BM, BN>::THREADS, 2)
    gemm_bias_act(const pp_cuda_a x, unsigned m, unsigned k, const float *__restrict__ wt,
                  unsigned ldw, const float *__restrict__ bias, unsigned n, pp_act act,
                  float *__restrict__ c, unsigned ldc)
{
  using Loop = pp::Mainloop<BM, BN>;
  __shared__ typename Loop::T::Shared smem;
  const unsigned m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
  Loop loop(x, wt, m, k, ldw, m0, n0);
  float acc[8][8];
  loop.run(smem, acc);

  const bool vec_store = ldc % 4 == 0 && (reinterpret_cast<size_t>(c) & 15) == 0;
#pragma unroll
  for (int r = 0; r < 8; r++) {
    const unsigned row = m0 + Loop::row_of(r);
    if (row >= m)
      continue;
#pragma unroll
    for (int h = 0; h < 2; h++) {
      const unsigned col = n0 + Loop::col_of(h * 4);
      float v[4];
#pragma unroll
      for (int j = 0; j < 4; j++) {
        const float b = (bias && col + j < n) ? __ldg(bias + col + j) : 0.f;
        v[j] = pp::activate<A>(act, acc[r][h * 4 + j] + b);
      }
      float *dst = c + (size_t) row * ldc + col;
      if (vec_store && col + 3 < n) {
        *reinterpret_cast<float4 *>(dst) = make_float4(v[0], v[1], v[2], v[3]);
      } else {
#pragma unroll
        for (int j = 0; j < 4; j++)
          if (col + j < n)
            dst[j] = v[j];
      }
    }
  }
}

template <int BM, int BN, int A>
cudaError_t
launch_act(cudaStream_t stream, const pp_cuda_a *x, uint32_t m, uint32_t k, const float *wt,
           uint32_t ldw, const float *bias, uint32_t n, pp_act act, float *c, uint32_t ldc)
{
  const dim3 grid((n + BN - 1) / BN, (m + BM - 1) / BM);
  gemm_bias_act<BM, BN, A>
      <<<grid, pp::Tile<BM, BN>::THREADS, 0, stream>>>(*x, m, k, wt, ldw, bias, n, act, c, ldc);
  return cudaGetLastError();
}

template <int BM, int BN>
cudaError_t
launch(cudaStream_t stream, const pp_cuda_a *x, uint32_t m, uint32_t k, const float *wt,
       uint32_t ldw, const float *bias, uint32_t n, pp_act act, float *c, uint32_t ldc)
{
  switch (pp::act_code(act)) {
    case PP_ACT_IDENTITY:
      return launch_act<BM, BN, PP_ACT_IDENTITY>(stream, x, m, k, wt, ldw, bias, n, act, c, ldc);
    case PP_ACT_RELU:
      return launch_act<BM, BN, PP_ACT_RELU>(stream, x, m, k, wt, ldw, bias, n, act, c, ldc);
    default:
      return launch_act<BM, BN, pp::ACT_ANY>(stream, x, m, k, wt, ldw, bias, n, act, c, ldc);
  }
}

} // namespace

extern "C" cudaError_t
pp_cuda_gemm(cudaStream_t stream, const pp_cuda_a *x, uint32_t m, uint32_t k, const float *wt,
             uint32_t ldw, const float *bias, uint32_t n, pp_act act, float *c, uint32_t ldc,
             pp_gemm_tile tile)
{
  if (!stream || !x || !wt || !c || m == 0 || k == 0 || n == 0 || ldw < pp_cuda_pad4(n) ||
      ldw % 4 != 0 || ldc < n || (m + 63) / 64 > 65535u || (x->kind != PP_A_F32 && !x->k_offset))
    return cudaErrorInvalidValue;
  switch (tile) {
    case PP_TILE_128x128:
      return launch<128, 128>(stream, x, m, k, wt, ldw, bias, n, act, c, ldc);
    case PP_TILE_64x64:
      return launch<64, 64>(stream, x, m, k, wt, ldw, bias, n, act, c, ldc);
    default:
      return cudaErrorInvalidValue;
  }
}
