// SPDX-License-Identifier: LGPL-2.1-or-later
/* A two-layer MLP in one kernel when O = 1 and D ≤ 256: each block computes
 * complete rows of H = act(X·W0ᵀ + b0) in registers (its tile spans all of
 * D), multiplies them by w1 and reduces across the threads of each row with
 * warp shuffles. H never touches memory and a frame is one launch: what
 * small, launch-bound workloads need. */
#include "activation.cuh"
#include "gemm_mainloop.cuh"

namespace
{

/* Two blocks per SM: one alone leaves the SM at an eighth of its warps,
 * stalled on latency. */
template <int BN, int HIDDEN, int OUT>
__global__ void __launch_bounds__(256, 2)
    mlp_fused(const pp_cuda_a x, unsigned m, unsigned k, const float *__restrict__ w0t,
              unsigned ldw, const float *__restrict__ b0, unsigned d, pp_act hidden_act,
              const float *__restrict__ w1, const float *__restrict__ b1, pp_act out_act,
              float *__restrict__ y)
{
  constexpr int BM = 256 * 64 / BN; /* 256 threads × 64 outputs each, over BN columns */
  using Loop = pp::Mainloop<BM, BN>;
  static_assert(Loop::T::THREADS == 256, "256 threads");
  __shared__ typename Loop::T::Shared smem;
  const unsigned m0 = blockIdx.x * BM;
  Loop loop(x, w0t, m, k, ldw, m0, 0);
  float acc[8][8];
  loop.run(smem, acc);

  /* One row at a time, so only one partial sum is live next to the 64
   * accumulators (eight left the kernel spilling at 128 registers). */
  const float bias1 = b1 ? __ldg(b1) : 0.f;
#pragma unroll
  for (int r = 0; r < 8; r++) {
    float partial = 0.f;
#pragma unroll
    for (int c = 0; c < 8; c++) {
      const unsigned col = Loop::col_of(c);
      if (col < d) {
        const float h = pp::activate<HIDDEN>(hidden_act, acc[r][c] + (b0 ? __ldg(b0 + col) : 0.f));
        partial = fmaf(h, __ldg(w1 + col), partial);
      }
    }
    /* The COLS threads sharing a row are consecutive lanes of one warp. */
#pragma unroll
    for (int offset = Loop::T::COLS / 2; offset > 0; offset /= 2)
      partial += __shfl_xor_sync(0xffffffffu, partial, offset);
    const unsigned row = m0 + Loop::row_of(r);
    if (threadIdx.x % Loop::T::COLS == 0 && row < m)
      y[row] = pp::activate<OUT>(out_act, partial + bias1);
  }
}

template <int BN, int HIDDEN, int OUT>
cudaError_t
launch_act(cudaStream_t stream, const pp_cuda_a *x, uint32_t m, uint32_t k, const float *w0t,
           uint32_t ldw, const float *b0, uint32_t d, pp_act hidden_act, const float *w1,
           const float *b1, pp_act out_act, float *y)
{
  constexpr int BM = 256 * 64 / BN;
  if (d > BN)
    return cudaErrorInvalidValue;
  mlp_fused<BN, HIDDEN, OUT><<<(m + BM - 1) / BM, 256, 0, stream>>>(*x, m, k, w0t, ldw, b0, d,
                                                                    hidden_act, w1, b1, out_act, y);
  return cudaGetLastError();
}

template <int BN, int HIDDEN>
cudaError_t
launch_out(cudaStream_t stream, const pp_cuda_a *x, uint32_t m, uint32_t k, const float *w0t,
           uint32_t ldw, const float *b0, uint32_t d, pp_act hidden_act, const float *w1,
           const float *b1, pp_act out_act, float *y)
{
  switch (pp::act_code(out_act)) {
    case PP_ACT_IDENTITY:
      return launch_act<BN, HIDDEN, PP_ACT_IDENTITY>(stream, x, m, k, w0t, ldw, b0, d, hidden_act,
                                                     w1, b1, out_act, y);
    case PP_ACT_RELU:
      return launch_act<BN, HIDDEN, PP_ACT_RELU>(stream, x, m, k, w0t, ldw, b0, d, hidden_act, w1,
                                                 b1, out_act, y);
    default:
      return launch_act<BN, HIDDEN, pp::ACT_ANY>(stream, x, m, k, w0t, ldw, b0, d, hidden_act, w1,
                                                 b1, out_act, y);
  }
}

/* Nine instantiations per tile: hidden and output activation each as
 * identity, ReLU or any (activation.cuh). */
template <int BN>
cudaError_t
launch(cudaStream_t stream, const pp_cuda_a *x, uint32_t m, uint32_t k, const float *w0t,
       uint32_t ldw, const float *b0, uint32_t d, pp_act hidden_act, const float *w1,
       const float *b1, pp_act out_act, float *y)
{
  switch (pp::act_code(hidden_act)) {
    case PP_ACT_IDENTITY:
      return launch_out<BN, PP_ACT_IDENTITY>(stream, x, m, k, w0t, ldw, b0, d, hidden_act, w1, b1,
                                             out_act, y);
    case PP_ACT_RELU:
      return launch_out<BN, PP_ACT_RELU>(stream, x, m, k, w0t, ldw, b0, d, hidden_act, w1, b1,
                                         out_act, y);
    default:
      return launch_out<BN, pp::ACT_ANY>(stream, x, m, k, w0t, ldw, b0, d, hidden_act, w1, b1,
                                         out_act, y);
  }
}

} // namespace

extern "C" pp_fused_tile
pp_cuda_fused_tile_for(uint32_t d)
{
  return d <= 64    ? PP_FUSED_D64
         : d <= 128 ? PP_FUSED_D128
         : d <= 256 ? PP_FUSED_D256
                    : PP_N_FUSED_TILES;
}

extern "C" cudaError_t
pp_cuda_mlp_fused(cudaStream_t stream, const pp_cuda_a *x, uint32_t m, uint32_t k, const float *w0t,
                  uint32_t ldw, const float *b0, uint32_t d, pp_act hidden_act, const float *w1,
                  const float *b1, pp_act out_act, float *y, pp_fused_tile tile)
{
  if (!stream || !x || !w0t || !w1 || !y || m == 0 || k == 0 || d == 0 || ldw < pp_cuda_pad4(d) ||
      ldw % 4 != 0 || (x->kind != PP_A_F32 && !x->k_offset))
    return cudaErrorInvalidValue;
  switch (tile) {
    case PP_FUSED_D64:
      return launch<64>(stream, x, m, k, w0t, ldw, b0, d, hidden_act, w1, b1, out_act, y);
    case PP_FUSED_D128:
      return launch<128>(stream, x, m, k, w0t, ldw, b0, d, hidden_act, w1, b1, out_act, y);
    case PP_FUSED_D256:
      return launch<256>(stream, x, m, k, w0t, ldw, b0, d, hidden_act, w1, b1, out_act, y);
    default:
      return cudaErrorInvalidValue;
  }
}
