// SPDX-License-Identifier: LGPL-2.1-or-later
/* An MLP of any depth in one kernel when every hidden layer is at most 64
 * wide and O = 1: a block computes its 128 rows of the first layer with the
 * GEMM mainloop (the frame read through pp_cuda_a, converted in the load),
 * keeps them on chip, and runs each further layer from shared memory (its
 * activations transposed, a row group's four values one float4; the
 * layer's weights transposed beside them), the last as a row-dot reduced
 * across a row's lanes. No activation touches device memory and a frame is
 * one launch, where layer by layer it is one launch and one round trip per
 * layer. */
#include "activation.cuh"
#include "gemm_mainloop.cuh"

namespace
{

constexpr int BM = 128, BN = PP_CHAIN_MAX_D; /* 128 threads, 8×8 outputs each */

struct Chain {
  pp_cuda_chain_layer layer[PP_MAX_CHAIN];
  unsigned n;
};

/* Three blocks per SM (12 warps): at four the 8×8 accumulators and the
 * mainloop's registers spill. */
template <int FIRST>
__global__ void __launch_bounds__(128, 3)
    mlp_chain(const pp_cuda_a x, unsigned m, unsigned k, const Chain chain, float *__restrict__ y)
{
  using Loop = pp::Mainloop<BM, BN>;
  static_assert(Loop::T::THREADS == 128, "128 threads");
  /* The mainloop's slices are done with before a layer's weights land. */
  __shared__ union {
    typename Loop::T::Shared loop;
    float wt[BN][BN]; /* a layer's weights, transposed: wt[in][out] */
  } s;
  __shared__ float ht[BN][BM]; /* the block's activations, transposed: ht[unit][row] */
  const unsigned m0 = blockIdx.x * BM;
  const int tx = threadIdx.x % Loop::T::COLS, ty = threadIdx.x / Loop::T::COLS;

  float acc[8][8];
  {
    const pp_cuda_chain_layer &l0 = chain.layer[0];
    Loop loop(x, l0.wt, m, k, l0.ldw, m0, 0);
    loop.run(s.loop, acc);
  }
  /* acc becomes h = act(acc + b), the activations of the layer just run:
   * one array of 64 registers serves both. */
  {
    const pp_cuda_chain_layer &l0 = chain.layer[0];
#pragma unroll
    for (int c = 0; c < 8; c++) {
      const unsigned col = Loop::col_of(c);
      const float b = l0.b && col < l0.out ? __ldg(l0.b + col) : 0.f;
#pragma unroll
      for (int r = 0; r < 8; r++)
        acc[r][c] = pp::activate<FIRST>(l0.act, acc[r][c] + b);
    }
  }
  for (unsigned li = 1; li + 1 < chain.n; li++) {
    const pp_cuda_chain_layer &l = chain.layer[li];
    __syncthreads(); /* the previous layer's reads of ht and wt are done */
#pragma unroll
    for (int c = 0; c < 8; c++) {
      const int col = Loop::col_of(c);
#pragma unroll
      for (int half = 0; half < 2; half++)
        *reinterpret_cast<float4 *>(&ht[col][half * (BM / 2) + ty * 4]) = make_float4(
            acc[half * 4][c], acc[half * 4 + 1][c], acc[half * 4 + 2][c], acc[half * 4 + 3][c]);
    }
    for (unsigned i = threadIdx.x; i < BN * BN; i += blockDim.x) {
      const unsigned o = i / BN, j = i % BN; /* coalesced reads along a row of w */
      s.wt[j][o] = o < l.out && j < l.in ? __ldg(l.w + (size_t) o * l.in + j) : 0.f;
    }
    __syncthreads();
#pragma unroll
    for (int r = 0; r < 8; r++)
#pragma unroll
      for (int c = 0; c < 8; c++)
        acc[r][c] = 0.f;
#pragma unroll 4
    for (unsigned j = 0; j < l.in; j++) {
      const float4 a0 = *reinterpret_cast<const float4 *>(&ht[j][ty * 4]);
      const float4 a1 = *reinterpret_cast<const float4 *>(&ht[j][BM / 2 + ty * 4]);
      const float4 b0 = *reinterpret_cast<const float4 *>(&s.wt[j][tx * 4]);
      const float4 b1 = *reinterpret_cast<const float4 *>(&s.wt[j][BN / 2 + tx * 4]);
      const float av[8] = { a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w };
      const float bv[8] = { b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w };
#pragma unroll
      for (int r = 0; r < 8; r++)
#pragma unroll
        for (int c = 0; c < 8; c++)
          acc[r][c] = fmaf(av[r], bv[c], acc[r][c]);
    }
#pragma unroll
    for (int c = 0; c < 8; c++) {
      const unsigned col = Loop::col_of(c);
      const float b = l.b && col < l.out ? __ldg(l.b + col) : 0.f;
#pragma unroll
      for (int r = 0; r < 8; r++)
        acc[r][c] = pp::activate<pp::ACT_ANY>(l.act, acc[r][c] + b);
    }
  }
  /* The last layer, one output: each row's dot product, its COLS lanes'
   * partial sums added with shuffles. */
  const pp_cuda_chain_layer &last = chain.layer[chain.n - 1];
  const float bias = last.b ? __ldg(last.b) : 0.f;
#pragma unroll
  for (int r = 0; r < 8; r++) {
    float partial = 0.f;
#pragma unroll
    for (int c = 0; c < 8; c++) {
      const unsigned col = Loop::col_of(c);
      if (col < last.in)
        partial = fmaf(acc[r][c], __ldg(last.w + col), partial);
    }
#pragma unroll
    for (int offset = Loop::T::COLS / 2; offset > 0; offset /= 2)
      partial += __shfl_xor_sync(0xffffffffu, partial, offset);
    const unsigned row = m0 + Loop::row_of(r);
    if (tx == 0 && row < m)
      y[row] = pp::activate<pp::ACT_ANY>(last.act, partial + bias);
  }
}

} // namespace

extern "C" bool
pp_cuda_mlp_chain_fits(unsigned n_layers, const uint32_t *outs)
{
  if (n_layers < 3 || n_layers > PP_MAX_CHAIN || outs[n_layers - 1] != 1)
    return false;
  for (unsigned i = 0; i + 1 < n_layers; i++)
    if (outs[i] == 0 || outs[i] > PP_CHAIN_MAX_D)
      return false;
  return true;
}

extern "C" cudaError_t
pp_cuda_mlp_chain(cudaStream_t stream, const pp_cuda_a *x, uint32_t m, uint32_t k,
                  const pp_cuda_chain_layer *layers, unsigned n_layers, float *y)
{
  if (!stream || !x || !layers || !y || m == 0 || k == 0 || n_layers > PP_MAX_CHAIN ||
      (x->kind != PP_A_F32 && !x->k_offset))
    return cudaErrorInvalidValue;
  uint32_t outs[PP_MAX_CHAIN];
  for (unsigned i = 0; i < n_layers; i++)
    outs[i] = layers[i].out;
  if (!pp_cuda_mlp_chain_fits(n_layers, outs) || !layers[0].wt || layers[0].in != k ||
      layers[0].ldw < pp_cuda_pad4(layers[0].out) || layers[0].ldw % 4 != 0)
    return cudaErrorInvalidValue;
  Chain chain = {};
  chain.n = n_layers;
  for (unsigned i = 0; i < n_layers; i++) {
    chain.layer[i] = layers[i];
    if (i > 0 && (!layers[i].w || layers[i].in != layers[i - 1].out))
      return cudaErrorInvalidValue;
  }
  const unsigned blocks = (m + BM - 1) / BM;
  /* The first layer's activation as a template code: ReLU or identity
   * spare the switch in its 64 values a thread. */
  switch (pp::act_code(layers[0].act)) {
    case PP_ACT_IDENTITY:
      mlp_chain<PP_ACT_IDENTITY><<<blocks, BM, 0, stream>>>(*x, m, k, chain, y);
      break;
    case PP_ACT_RELU:
      mlp_chain<PP_ACT_RELU><<<blocks, BM, 0, stream>>>(*x, m, k, chain, y);
      break;
    default:
      mlp_chain<pp::ACT_ANY><<<blocks, BM, 0, stream>>>(*x, m, k, chain, y);
  }
  return cudaGetLastError();
}
