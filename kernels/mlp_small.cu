// SPDX-License-Identifier: LGPL-2.1-or-later
/* A whole two-layer MLP for small frames, spread over many blocks. The
 * tiled kernels (gemm.cu, mlp_fused.cu) give each block 64-256 rows, so a
 * frame of 256 rows runs on one to four of a GPU's hundred-odd SMs, taking
 * far longer than its few MFLOP need. Here a block owns only RB rows (1-8) and its 256
 * threads split the hidden units and K between them:
 *
 *   thread t computes hidden units 4q..4q+3 (q = t % (DP / 4)) over the
 *   inputs k ≡ t / (DP / 4) (mod 1024 / DP) for its RB rows, the rows
 *   staged in shared memory, reading W as float4; the K-split partial sums
 *   are added in shared memory, bias and activation applied, and each
 *   output is a warp's dot product with w1.
 *
 * Every block reads the whole of W0 (from L2), so this wins only while
 * frames are small; the planner times it against the other paths.
 *
 * With a `done` signal the last block to finish writes the frame's
 * sequence number to host memory, so the host sees the frame done without
 * an event record or a query of one (pp_cuda_done_signal). */
#include "activation.h"
#include "done_signal.cuh"
#include "gemm_mainloop.cuh"

namespace
{

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
/* Inputs staged per pass: RB × 256 floats of shared memory. */
constexpr int kKC = 256;

template <int DP, int RB>
__global__ void
__launch_bounds__(kThreads)
    mlp_small(const pp_cuda_a x, unsigned m, unsigned k, const float *__restrict__ w0t,
              unsigned ldw, const float *__restrict__ b0, unsigned d, pp_act hidden_act,
              const float *__restrict__ w1, const float *__restrict__ b1, unsigned o,
              pp_act out_act, float *__restrict__ y, pp_cuda_done_signal done)
{
  constexpr int DQ = DP / 4;        /* float4 columns of hidden units */
  constexpr int KS = kThreads / DQ; /* K-splits */
  __shared__ __align__(16) float xs[RB][kKC];
  __shared__ __align__(16) float part[KS][RB][DP];
  const unsigned q = threadIdx.x % DQ, ks = threadIdx.x / DQ;
  const unsigned m0 = blockIdx.x * RB;
  const bool f32_vec = pp::f32_vectors(x);

  float4 acc[RB];
#pragma unroll
  for (int r = 0; r < RB; r++)
    acc[r] = make_float4(0.f, 0.f, 0.f, 0.f);
  for (unsigned k0 = 0; k0 < k; k0 += kKC) {
    for (unsigned g = threadIdx.x; g < RB * kKC / 4; g += kThreads) {
      const unsigned r = g / (kKC / 4), c = g % (kKC / 4) * 4, row = m0 + r;
      const bool ok = row < m;
      const float4 v =
          pp::load_x4(x, ok ? pp::sample_origin(x, row) : 0, ok, row, k0 + c, k, f32_vec);
      *reinterpret_cast<float4 *>(&xs[r][c]) = v;
    }
    __syncthreads();
    const unsigned kn = min((unsigned) kKC, k - k0);
    if (4 * q < d) {
      /* A thread's loads of W all in flight at once (tiny: 16 float4s): the
       * loop waits on L2 once per pass, not on the FMAs. */
      const float4 *w = reinterpret_cast<const float4 *>(w0t + (size_t) k0 * ldw) + q;
#pragma unroll 16
      for (unsigned kk = ks; kk < kn; kk += KS) {
        const float4 wv = __ldg(w + (size_t) kk * (ldw / 4));
#pragma unroll
        for (int r = 0; r < RB; r++) {
          const float xv = xs[r][kk];
          acc[r].x = fmaf(xv, wv.x, acc[r].x);
          acc[r].y = fmaf(xv, wv.y, acc[r].y);
          acc[r].z = fmaf(xv, wv.z, acc[r].z);
          acc[r].w = fmaf(xv, wv.w, acc[r].w);
        }
      }
    }
    __syncthreads();
  }
#pragma unroll
  for (int r = 0; r < RB; r++)
    *reinterpret_cast<float4 *>(&part[ks][r][4 * q]) = acc[r];
  __syncthreads();

  /* Each hidden unit's sum is written over its first partial: only the
   * thread that adds a unit's partials reads them. */
  float(*hs)[DP] = part[0];
  for (unsigned e = threadIdx.x; e < RB * DP; e += kThreads) {
    const unsigned r = e / DP, jj = e % DP;
    float sum = 0.f;
#pragma unroll
    for (int p = 0; p < KS; p++)
      sum += part[p][r][jj];
    hs[r][jj] = jj < d ? pp_act_apply(hidden_act, sum + (b0 ? __ldg(b0 + jj) : 0.f)) : 0.f;
  }
  __syncthreads();

  /* One (row, output) pair per warp at a time; the branch is warp-uniform. */
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  for (unsigned p = warp; p < RB * o; p += kWarps) {
    const unsigned r = p / o, out = p % o, row = m0 + r;
    if (row >= m)
      continue;
    float sum = 0.f;
    for (unsigned jj = lane; jj < d; jj += 32)
      sum = fmaf(hs[r][jj], __ldg(w1 + (size_t) out * d + jj), sum);
#pragma unroll
    for (int offset = 16; offset > 0; offset /= 2)
      sum += __shfl_xor_sync(0xffffffffu, sum, offset);
    if (lane == 0)
      y[(size_t) row * o + out] = pp_act_apply(out_act, sum + (b1 ? __ldg(b1 + out) : 0.f));
  }
  pp::raise_done(done);
}

template <int DP, int RB>
cudaError_t
launch(cudaStream_t stream, const pp_cuda_a *x, uint32_t m, uint32_t k, const float *w0t,
       uint32_t ldw, const float *b0, uint32_t d, pp_act hidden_act, const float *w1,
       const float *b1, uint32_t o, pp_act out_act, float *y, const pp_cuda_done_signal &done)
{
  mlp_small<DP, RB><<<(m + RB - 1) / RB, kThreads, 0, stream>>>(
      *x, m, k, w0t, ldw, b0, d, hidden_act, w1, b1, o, out_act, y, done);
  return cudaGetLastError();
}

template <int DP>
cudaError_t
launch_rows(cudaStream_t stream, const pp_cuda_a *x, uint32_t m, uint32_t k, const float *w0t,
            uint32_t ldw, const float *b0, uint32_t d, pp_act hidden_act, const float *w1,
            const float *b1, uint32_t o, pp_act out_act, float *y, uint32_t rows,
            const pp_cuda_done_signal &done)
{
  switch (rows) {
    case 1:
      return launch<DP, 1>(stream, x, m, k, w0t, ldw, b0, d, hidden_act, w1, b1, o, out_act, y,
                           done);
    case 2:
      return launch<DP, 2>(stream, x, m, k, w0t, ldw, b0, d, hidden_act, w1, b1, o, out_act, y,
                           done);
    case 4:
      return launch<DP, 4>(stream, x, m, k, w0t, ldw, b0, d, hidden_act, w1, b1, o, out_act, y,
                           done);
    case 8:
      return launch<DP, 8>(stream, x, m, k, w0t, ldw, b0, d, hidden_act, w1, b1, o, out_act, y,
                           done);
    default:
      return cudaErrorInvalidValue;
  }
}

} // namespace

extern "C" cudaError_t
pp_cuda_mlp_small(cudaStream_t stream, const pp_cuda_a *x, uint32_t m, uint32_t k, const float *w0t,
                  uint32_t ldw, const float *b0, uint32_t d, pp_act hidden_act, const float *w1,
                  const float *b1, uint32_t o, pp_act out_act, float *y, uint32_t rows_per_block,
                  const pp_cuda_done_signal *done)
{
  const pp_cuda_done_signal none = { NULL, NULL, 0 };
  if (!stream || !x || !w0t || !w1 || !y || m == 0 || k == 0 || d == 0 || d > PP_SMALL_MAX_D ||
      o == 0 || o > PP_ROWDOT_MAX_O || ldw < d || ldw % 4 || (reinterpret_cast<size_t>(w0t) & 15) ||
      (x->kind != PP_A_F32 && !x->k_offset) || (done && (!done->count || !done->flag)))
    return cudaErrorInvalidValue;
  const pp_cuda_done_signal &signal = done ? *done : none;
  /* Hidden units padded to whole warps, so a warp shares its K-split. */
  if (d <= 32)
    return launch_rows<32>(stream, x, m, k, w0t, ldw, b0, d, hidden_act, w1, b1, o, out_act, y,
                           rows_per_block, signal);
  if (d <= 64)
    return launch_rows<64>(stream, x, m, k, w0t, ldw, b0, d, hidden_act, w1, b1, o, out_act, y,
                           rows_per_block, signal);
  if (d <= 128)
    return launch_rows<128>(stream, x, m, k, w0t, ldw, b0, d, hidden_act, w1, b1, o, out_act, y,
                            rows_per_block, signal);
  return launch_rows<256>(stream, x, m, k, w0t, ldw, b0, d, hidden_act, w1, b1, o, out_act, y,
                          rows_per_block, signal);
}
