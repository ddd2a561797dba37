// SPDX-License-Identifier: LGPL-2.1-or-later
/* The chain kernel: an MLP of 3 to 8 layers whose hidden layers are at
 * most 64 wide and whose output is one value, in one launch, every layer
 * on the tensor cores (mma.sync m16n8k8, TF32 inputs, FP32 accumulation),
 * the frame read through pp_cuda_a and converted in the load. No activation
 * touches device memory and a frame is one launch, where layer by layer it
 * is one launch and one round trip per layer. A warp owns 16 rows: its
 * 16×64 activations live in its accumulators between layers, going through
 * a small shared tile of its own to become the next layer's A operand.
 * PASSES = 3 is exact FP32, 1 is TF32, and the fragments are laid out as
 * mma_tf32.cuh says. */
#include "activation.cuh"
#include "gemm_mainloop.cuh"
#include "mma_tf32.cuh"

namespace
{

constexpr int WARPS = 4, BM = 16 * WARPS, D = PP_CHAIN_MAX_D, BK = 32, NT = D / 8;

struct Chain {
  pp_cuda_chain_layer layer[PP_MAX_CHAIN];
  unsigned n;
};

/* Paddings chosen so each fragment load hits 32 different banks. */
struct Smem {
  union {
    struct {
      float x[BM][BK + 4]; /* the frame's X, a slice of K: x[row][k] */
      float w[BK][D + 8];  /* layer 0's Wᵀ, the same slice: w[k][n] */
    } first;
    float w[D][D + 4]; /* a later layer's W as stored: w[n][k] */
  } u;
  float h[WARPS][16][D + 4]; /* each warp's activations: h[row][unit] */
};

/* acc += A·B over 8 of K: A's four values (a0..a3 as the layout above),
 * B's two for each of the NT column tiles. */
template <int PASSES>
__device__ __forceinline__ void
mma_step(float (&acc)[NT][4], const float (&av)[4], const float (&bv)[NT][2])
{
  uint32_t ah[4], al[4];
#pragma unroll
  for (int i = 0; i < 4; i++)
    pp::split_tf32<PASSES>(av[i], ah[i], al[i]);
#pragma unroll
  for (int j = 0; j < NT; j++) {
    uint32_t bh[2], bl[2];
    pp::split_tf32<PASSES>(bv[j][0], bh[0], bl[0]);
    pp::split_tf32<PASSES>(bv[j][1], bh[1], bl[1]);
    pp::mma_pieces<PASSES>(acc[j], ah, al, bh, bl);
  }
}

/* acc[j] (rows g, g+8; columns 8j+2t, 8j+2t+1) = act(acc + b), zero past
 * `out` so the next layer's padding adds nothing. A known kind folds
 * pp_act_apply's switch away; with ALL_IN (out is D) no column is checked:
 * a check a value put a branch around each activation, and each waited
 * for the one before (the wide kernel's MLP, docs/PERFORMANCE.md). */
template <int ACT, bool ALL_IN>
__device__ __forceinline__ void
bias_act(float (&acc)[NT][4], const pp_cuda_chain_layer &l, int t)
{
  const pp_act act = ACT == pp::ACT_ANY ? l.act : pp_act{ (pp_act_kind) ACT, l.act.slope };
#pragma unroll
  for (int j = 0; j < NT; j++)
#pragma unroll
    for (int i = 0; i < 4; i++) {
      const unsigned col = j * 8 + 2 * t + (i & 1);
      const bool in = ALL_IN || col < l.out;
      const float b = l.b && in ? __ldg(l.b + col) : 0.f;
      acc[j][i] = in ? pp::activate<ACT>(act, acc[j][i] + b) : 0.f;
    }
}

template <int ACT>
__device__ __forceinline__ void
bias_act_as(float (&acc)[NT][4], const pp_cuda_chain_layer &l, int t)
{
  if (l.out >= D)
    bias_act<ACT, true>(acc, l, t);
  else
    bias_act<ACT, false>(acc, l, t);
}

template <int PASSES, int FIRST>
__global__ void
__launch_bounds__(WARPS * 32) mlp_chain_tc(const pp_cuda_a x, unsigned m, unsigned k,
                                           const Chain chain, float *__restrict__ y)
{
  __shared__ Smem s;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const unsigned m0 = blockIdx.x * BM;
  float acc[NT][4] = {};

  /* Layer 0: X (through pp_cuda_a) times Wᵀ, a slice of BK inputs at a time.
   * Each thread loads four float4 of X, rows tid/8 + 16i, and four of Wᵀ,
   * all eight in flight before any is stored (bytes as words: see
   * load_word). */
  const pp_cuda_chain_layer &l0 = chain.layer[0];
  const bool f32_vec = pp::f32_vectors(x), words = x.kind == PP_A_U8_VEC4;
  const unsigned kq = (threadIdx.x % 8) * 4;
  long long origin[4];
#pragma unroll
  for (int i = 0; i < 4; i++) {
    const unsigned row = m0 + threadIdx.x / 8 + 16 * i;
    origin[i] = x.kind == PP_A_F32 || row >= m ? 0 : pp::sample_origin(x, row);
  }
  for (unsigned k0 = 0; k0 < k; k0 += BK) {
    float4 w[4];
#pragma unroll
    for (int i = 0; i < 4; i++) {
      const unsigned kk = threadIdx.x / 16 + 8 * i, n = (threadIdx.x % 16) * 4;
      w[i] = k0 + kk < k && n < l0.ldw
                 ? __ldg(reinterpret_cast<const float4 *>(l0.wt + (size_t) (k0 + kk) * l0.ldw + n))
                 : make_float4(0.f, 0.f, 0.f, 0.f);
    }
    if (words) {
      const bool col_in = k0 + kq < k;
      const long long offset = col_in ? __ldg(x.k_offset + k0 + kq) : 0;
      uint32_t word[4];
#pragma unroll
      for (int i = 0; i < 4; i++) {
        const bool in = col_in && m0 + threadIdx.x / 8 + 16 * i < m;
        word[i] = pp::load_word(x, in ? origin[i] + offset : 0);
      }
#pragma unroll
      for (int i = 0; i < 4; i++) {
        const bool in = col_in && m0 + threadIdx.x / 8 + 16 * i < m;
        const float4 v = in ? pp::word_values(x, word[i]) : make_float4(0.f, 0.f, 0.f, 0.f);
        *reinterpret_cast<float4 *>(&s.u.first.x[threadIdx.x / 8 + 16 * i][kq]) = v;
      }
    } else {
#pragma unroll
      for (int i = 0; i < 4; i++) {
        const unsigned r = threadIdx.x / 8 + 16 * i;
        const float4 v = pp::load_x4(x, origin[i], m0 + r < m, m0 + r, k0 + kq, k, f32_vec);
        *reinterpret_cast<float4 *>(&s.u.first.x[r][kq]) = v;
      }
    }
#pragma unroll
    for (int i = 0; i < 4; i++)
      *reinterpret_cast<float4 *>(&s.u.first.w[threadIdx.x / 16 + 8 * i][(threadIdx.x % 16) * 4]) =
          w[i];
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < BK; kk += 8) {
      const int r = warp * 16 + g;
      const float av[4] = { s.u.first.x[r][kk + t], s.u.first.x[r + 8][kk + t],
                            s.u.first.x[r][kk + t + 4], s.u.first.x[r + 8][kk + t + 4] };
      float bv[NT][2];
#pragma unroll
      for (int j = 0; j < NT; j++) {
        bv[j][0] = s.u.first.w[kk + t][j * 8 + g];
        bv[j][1] = s.u.first.w[kk + t + 4][j * 8 + g];
      }
      mma_step<PASSES>(acc, av, bv);
    }
    __syncthreads();
  }
  if constexpr (FIRST == pp::ACT_ANY)
    pp::with_act(l0.act.kind, [&](auto kind) { bias_act_as<decltype(kind)::value>(acc, l0, t); });
  else
    bias_act_as<FIRST>(acc, l0, t);

  /* The middle layers: the warp's activations become its A operand through
   * its own tile; the layer's W, as stored, is every warp's B. */
  for (unsigned li = 1; li + 1 < chain.n; li++) {
    const pp_cuda_chain_layer &l = chain.layer[li];
    /* A fixed count a thread, unrolled: all its loads in flight at once, not
     * one global latency each. */
    float wv[D * D / (WARPS * 32)];
#pragma unroll
    for (int i = 0; i < D * D / (WARPS * 32); i++) {
      const unsigned e = threadIdx.x + i * WARPS * 32, n = e / D, j = e % D;
      wv[i] = n < l.out && j < l.in ? __ldg(l.w + (size_t) n * l.in + j) : 0.f;
    }
#pragma unroll
    for (int i = 0; i < D * D / (WARPS * 32); i++) {
      const unsigned e = threadIdx.x + i * WARPS * 32;
      s.u.w[e / D][e % D] = wv[i];
    }
#pragma unroll
    for (int j = 0; j < NT; j++) {
      s.h[warp][g][j * 8 + 2 * t] = acc[j][0];
      s.h[warp][g][j * 8 + 2 * t + 1] = acc[j][1];
      s.h[warp][g + 8][j * 8 + 2 * t] = acc[j][2];
      s.h[warp][g + 8][j * 8 + 2 * t + 1] = acc[j][3];
#pragma unroll
      for (int i = 0; i < 4; i++)
        acc[j][i] = 0.f;
    }
    __syncthreads();
    for (unsigned kk = 0; kk < l.in; kk += 8) {
      const float av[4] = { s.h[warp][g][kk + t], s.h[warp][g + 8][kk + t],
                            s.h[warp][g][kk + t + 4], s.h[warp][g + 8][kk + t + 4] };
      float bv[NT][2];
#pragma unroll
      for (int j = 0; j < NT; j++) {
        bv[j][0] = s.u.w[j * 8 + g][kk + t];
        bv[j][1] = s.u.w[j * 8 + g][kk + t + 4];
      }
      mma_step<PASSES>(acc, av, bv);
    }
    __syncthreads(); /* every warp is done with w before the next layer's lands */
    pp::with_act(l.act.kind, [&](auto kind) { bias_act_as<decltype(kind)::value>(acc, l, t); });
  }

  /* The last layer, one output: each row's dot product with w, in FP32, the
   * four lanes of a row added with shuffles. */
  const pp_cuda_chain_layer &last = chain.layer[chain.n - 1];
  float top = 0.f, bottom = 0.f;
#pragma unroll
  for (int j = 0; j < NT; j++)
#pragma unroll
    for (int i = 0; i < 2; i++) {
      const unsigned col = j * 8 + 2 * t + i;
      const float w = col < last.in ? __ldg(last.w + col) : 0.f;
      top = fmaf(acc[j][i], w, top);
      bottom = fmaf(acc[j][2 + i], w, bottom);
    }
#pragma unroll
  for (int offset = 1; offset < 4; offset *= 2) {
    top += __shfl_xor_sync(0xffffffffu, top, offset);
    bottom += __shfl_xor_sync(0xffffffffu, bottom, offset);
  }
  const float bias = last.b ? __ldg(last.b) : 0.f;
  const unsigned row = m0 + warp * 16 + g;
  if (t == 0 && row < m)
    y[row] = pp::activate<pp::ACT_ANY>(last.act, top + bias);
  if (t == 0 && row + 8 < m)
    y[row + 8] = pp::activate<pp::ACT_ANY>(last.act, bottom + bias);
}

template <int PASSES>
void
launch(cudaStream_t stream, const pp_cuda_a &x, uint32_t m, uint32_t k, const Chain &chain,
       float *y)
{
  const unsigned blocks = (m + BM - 1) / BM;
  switch (pp::act_code(chain.layer[0].act)) {
    case PP_ACT_IDENTITY:
      mlp_chain_tc<PASSES, PP_ACT_IDENTITY><<<blocks, WARPS * 32, 0, stream>>>(x, m, k, chain, y);
      break;
    case PP_ACT_RELU:
      mlp_chain_tc<PASSES, PP_ACT_RELU><<<blocks, WARPS * 32, 0, stream>>>(x, m, k, chain, y);
      break;
    default:
      mlp_chain_tc<PASSES, pp::ACT_ANY><<<blocks, WARPS * 32, 0, stream>>>(x, m, k, chain, y);
  }
}

} // namespace

extern "C" bool
pp_cuda_mlp_chain_fits(unsigned n_layers, const uint32_t *outs)
{
  return pp_cuda_one_output_fits(n_layers, outs, 3, PP_MAX_CHAIN, PP_CHAIN_MAX_D);
}

/* Whether the arguments make a chain the kernel can run. */
static bool
chain_valid(cudaStream_t stream, const pp_cuda_a *x, uint32_t m, uint32_t k,
            const pp_cuda_chain_layer *layers, unsigned n_layers, const float *y)
{
  if (!stream || !x || !layers || !y || m == 0 || k == 0 || n_layers > PP_MAX_CHAIN ||
      (x->kind != PP_A_F32 && !x->k_offset))
    return false;
  uint32_t outs[PP_MAX_CHAIN];
  for (unsigned i = 0; i < n_layers; i++) {
    outs[i] = layers[i].out;
    if (i > 0 && (!layers[i].w || layers[i].in != layers[i - 1].out))
      return false;
  }
  return pp_cuda_mlp_chain_fits(n_layers, outs) && layers[0].wt && layers[0].in == k &&
         layers[0].ldw >= pp_cuda_pad4(layers[0].out) && layers[0].ldw % 4 == 0;
}

extern "C" cudaError_t
pp_cuda_mlp_chain(cudaStream_t stream, const pp_cuda_a *x, uint32_t m, uint32_t k,
                  const pp_cuda_chain_layer *layers, unsigned n_layers, bool tf32, float *y)
{
  if (!chain_valid(stream, x, m, k, layers, n_layers, y))
    return cudaErrorInvalidValue;
  Chain chain = {};
  chain.n = n_layers;
  for (unsigned i = 0; i < n_layers; i++)
    chain.layer[i] = layers[i];
  if (tf32)
    launch<1>(stream, *x, m, k, chain, y);
  else
    launch<3>(stream, *x, m, k, chain, y);
  return cudaGetLastError();
}
