// SPDX-License-Identifier: LGPL-2.1-or-later
/* The warp kernel: an MLP of 2 to 8 layers at a 16-bit precision whose
 * hidden layers are at most 64 wide and whose output is one value, in one
 * launch, each warp carrying its 16 rows through every layer in its
 * registers. A layer's sums come out of mma.sync in the very fragments
 * the next layer's product takes as A (a pair of 8-column output tiles is
 * one 16-input k-step), so once the frame's rows are in shared memory no
 * activation is stored anywhere. The block loads the whole model's hidden
 * weights into shared memory once, from the wide kernel's packed blob
 * (wide_layout.cuh: each layer's BN × BK tiles, of which this reads the
 * first 64 rows), beside its rows of the frame.
 *
 * It rounds where the wide kernel rounds: the frame to the 16-bit type as
 * it is loaded; each hidden layer's acc + b, then the activation of that;
 * the last layer is each row's dot product in FP32. With the same sums in
 * the same k order, the hidden layers give the wide kernel's values bit
 * for bit; only the last sum's order differs.
 *
 * The wide kernel runs narrow's shape (192-64-64-64-64-1) with half its
 * warps idle on 64-wide layers and each layer's activations through
 * shared memory; this kernel has no idle warp and, at 96 KB a block, two
 * blocks an SM, all of a 1080p frame's rows in one wave (dev/wide-bench
 * on an H100: 18.4 µs a launch against the wide kernel's 29.3).
 *
 * Fragment layouts (PTX ISA, mma.m16n8k16 with 16-bit inputs), g = lane / 4,
 * t = lane % 4: A's registers (row g, k 2t..), (row g+8, k 2t..), (row g,
 * k 2t+8..), (row g+8, k 2t+8..); B's (k 2t.., n g), (k 2t+8.., n g); C
 * c0 (g, 2t), c1 (g, 2t+1), c2 (g+8, 2t), c3 (g+8, 2t+1). So output tile
 * nt's (c0, c1) and (c2, c3), packed, are A's registers 2 (nt % 2) and
 * 2 (nt % 2) + 1 of k-step nt / 2. */
#include <type_traits>

#include "activation.cuh"
#include "frame_rows.cuh"
#include "kernel_on_device.cuh"

using namespace pp_wide;

namespace
{

using G = Geometry<2>;
constexpr int BK = G::BK, CHUNK = G::CHUNK;
constexpr int W_WARPS = 8, W_THREADS = W_WARPS * 32, W_ROWS = 16, W_BM = W_WARPS * W_ROWS;
constexpr int D = PP_WARP_MAX_D, W_NT = D / 8, KS = D / 16;
static_assert(D == BK, "a hidden layer's inputs are one of the blob's input tiles");
static_assert(D * BK / CHUNK % W_THREADS == 0, "whole copies of a tile");

struct WarpNet {
  pp_cuda_wide_layer layer[PP_MAX_WIDE]; /* w: each hidden layer's first tile in the blob */
  unsigned n;
  uint32_t kp; /* the first layer's inputs, padded: the frame rows' stride */
};

/* Where hidden layer i's weights start in shared memory, in elements: D
 * rows of its padded inputs each, the first layer's kp, the others' D;
 * at i = n - 1, where the frame's rows start. */
__host__ __device__ inline size_t
w_offset(unsigned i, uint32_t kp)
{
  return i == 0 ? 0 : (size_t) D * kp + (size_t) (i - 1) * D * D;
}

inline size_t
warp_smem_bytes(unsigned n, uint32_t kp, size_t elem)
{
  return (w_offset(n - 1, kp) + (size_t) W_BM * kp) * elem;
}

/* Every hidden layer's first D rows of its tiles into shared memory, D ×
 * its padded inputs each, swizzled; one group committed. A tile's D × BK
 * at a time, whose shape is known here, so no index is divided by a
 * width known only at run time. */
template <typename T>
__device__ __forceinline__ void
load_weights(const WarpNet &net, T *w_s)
{
  constexpr int TILE_CHUNKS = D * BK / CHUNK, ROW_CHUNKS = BK / CHUNK;
  for (unsigned i = 0; i + 1 < net.n; i++) {
    const T *src = static_cast<const T *>(net.layer[i].w);
    const uint32_t kp = i == 0 ? net.kp : D;
    T *dst = w_s + w_offset(i, net.kp);
    for (unsigned tile = 0; tile < kp / BK; tile++)
#pragma unroll
      for (int c0 = 0; c0 < TILE_CHUNKS; c0 += W_THREADS) {
        const unsigned c = c0 + threadIdx.x, row = c / ROW_CHUNKS;
        const unsigned col = tile * BK + (c % ROW_CHUNKS) * CHUNK; /* swizzled as packed */
        pp::cp_async16(dst + row * kp + col,
                       src + (size_t) tile * BN * BK + row * BK + (c % ROW_CHUNKS) * CHUNK);
      }
  }
  asm volatile("cp.async.commit_group;" ::: "memory");
}

/* B's fragments of k-step k0 for all D columns, from weights w (D rows of
 * stride ld, swizzled). */
template <typename T>
__device__ __forceinline__ void
b_fragments(uint32_t (&bf)[W_NT][2], const T *w, uint32_t ld, unsigned k0, int lane)
{
#pragma unroll
  for (int p = 0; p < W_NT / 2; p++) {
    uint32_t r[4];
    const unsigned row = p * 16 + lane % 8 + (lane / 16) * 8;
    pp::ldsm_x4(r, w + row * ld + ((k0 / CHUNK + (lane / 8) % 2) ^ (lane & 7u)) * CHUNK);
    bf[2 * p][0] = r[0];
    bf[2 * p][1] = r[1];
    bf[2 * p + 1][0] = r[2];
    bf[2 * p + 1][1] = r[3];
  }
}

/* Layer l's act(acc + b), rounded as the wide kernel rounds (its
 * store_tile_as), zero past l.out, as the next layer's A fragments. */
template <typename T, int A>
__device__ __forceinline__ void
to_fragments(const float (&acc)[W_NT][4], const pp_cuda_wide_layer &l, uint32_t (&a)[KS][4],
             int lane)
{
  const pp_act act = A == pp::ACT_ANY ? l.act : pp_act{ (pp_act_kind) A, l.act.slope };
  const int t = lane % 4;
  auto store = [&](auto all_in) {
    constexpr bool ALL_IN = decltype(all_in)::value;
#pragma unroll
    for (int nt = 0; nt < W_NT; nt++) {
      const unsigned col = nt * 8 + 2 * t;
      const bool in0 = ALL_IN || col < l.out, in1 = ALL_IN || col + 1 < l.out;
      const float b0 = l.b && in0 ? __ldg(l.b + col) : 0.f;
      const float b1 = l.b && in1 ? __ldg(l.b + col + 1) : 0.f;
#pragma unroll
      for (int half = 0; half < 2; half++) {
        const float *c = acc[nt] + 2 * half;
        const float v0 = in0 ? pp::hidden_act<T, A>(act, c[0] + b0) : 0.f;
        const float v1 = in1 ? pp::hidden_act<T, A>(act, c[1] + b1) : 0.f;
        a[nt / 2][2 * (nt % 2) + half] = pp::pack2<T>(v0, v1);
      }
    }
  };
  /* As in the wide kernel: no check a value where every column is in. */
  if (l.out >= D)
    store(std::true_type{});
  else
    store(std::false_type{});
}

template <typename T>
__global__ void
__launch_bounds__(W_THREADS, 2)
    mlp_warp(const pp_cuda_a x, unsigned m, unsigned k, const WarpNet net, float *__restrict__ y)
{
  extern __shared__ __align__(128) unsigned char smem[];
  T *const w_s = reinterpret_cast<T *>(smem);
  T *const x_s = w_s + w_offset(net.n - 1, net.kp);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const unsigned m0 = blockIdx.x * W_BM;

  load_weights(net, w_s);
  load_rows<W_BM, W_THREADS>(x, m, k, m0, x_s, net.kp);
  asm volatile("cp.async.wait_group 0;" ::: "memory");
  __syncthreads();

  uint32_t a[KS][4];
  float acc[W_NT][4] = {};
  uint32_t bf[W_NT][2];
  /* The first layer: A from this warp's rows of the frame. */
  const T *rows = x_s + (warp * W_ROWS + lane % 16) * net.kp;
  for (unsigned k0 = 0; k0 < net.kp; k0 += 16) {
    uint32_t af[4];
    pp::ldsm_x4(af, rows + ((k0 / CHUNK + lane / 16) ^ (lane & 7u)) * CHUNK);
    b_fragments(bf, w_s, net.kp, k0, lane);
#pragma unroll
    for (int nt = 0; nt < W_NT; nt++)
      pp::mma16(acc[nt], af, bf[nt], T());
  }
  pp::with_act(net.layer[0].act.kind, [&](auto kind) {
    to_fragments<T, decltype(kind)::value>(acc, net.layer[0], a, lane);
  });
  /* The other hidden layers: A is the layer before's output. */
  for (unsigned li = 1; li + 1 < net.n; li++) {
    const T *w = w_s + w_offset(li, net.kp);
#pragma unroll
    for (int nt = 0; nt < W_NT; nt++)
      acc[nt][0] = acc[nt][1] = acc[nt][2] = acc[nt][3] = 0.f;
#pragma unroll
    for (int ks = 0; ks < KS; ks++) {
      b_fragments(bf, w, D, ks * 16, lane);
#pragma unroll
      for (int nt = 0; nt < W_NT; nt++)
        pp::mma16(acc[nt], a[ks], bf[nt], T());
    }
    pp::with_act(net.layer[li].act.kind, [&](auto kind) {
      to_fragments<T, decltype(kind)::value>(acc, net.layer[li], a, lane);
    });
  }

  /* The last layer: rows g and g + 8, each lane's 16 columns, then the
   * four lanes of a row summed. */
  const pp_cuda_wide_layer &last = net.layer[net.n - 1];
  const float *w = static_cast<const float *>(last.w);
  const int g = lane / 4, t = lane % 4;
  float sum[2] = { 0.f, 0.f };
#pragma unroll
  for (int ks = 0; ks < KS; ks++)
#pragma unroll
    for (int r = 0; r < 4; r++) {
      const unsigned col = ks * 16 + (r / 2) * 8 + 2 * t;
      T two[2];
      memcpy(two, &a[ks][r], sizeof two);
      const float w0 = col < last.in ? __ldg(w + col) : 0.f;
      const float w1 = col + 1 < last.in ? __ldg(w + col + 1) : 0.f;
      sum[r % 2] = fmaf(pp::to_float(two[1]), w1, fmaf(pp::to_float(two[0]), w0, sum[r % 2]));
    }
#pragma unroll
  for (int half = 0; half < 2; half++) {
    sum[half] += __shfl_xor_sync(0xffffffffu, sum[half], 1);
    sum[half] += __shfl_xor_sync(0xffffffffu, sum[half], 2);
    const unsigned row = m0 + warp * W_ROWS + g + 8 * half;
    if (t == 0 && row < m)
      y[row] = pp::activate<pp::ACT_ANY>(last.act, sum[half] + (last.b ? __ldg(last.b) : 0.f));
  }
}

template <typename T>
cudaError_t
launch(cudaStream_t stream, const pp_cuda_a &x, uint32_t m, uint32_t k, const WarpNet &net,
       size_t smem, float *y)
{
  int limit = 0;
  cudaError_t err = pp::allow_smem<mlp_warp<T>>(&limit);
  if (err != cudaSuccess)
    return err;
  if (smem > (size_t) limit)
    return cudaErrorInvalidValue;
  mlp_warp<T><<<(m + W_BM - 1) / W_BM, W_THREADS, smem, stream>>>(x, m, k, net, y);
  return cudaGetLastError();
}

} // namespace

extern "C" size_t
pp_cuda_mlp_warp_smem(pp_dtype type, uint32_t k, unsigned n_layers, const uint32_t *outs)
{
  if (pp_dtype_size(type) != 2 || !takes(k, n_layers, outs, D))
    return 0;
  return warp_smem_bytes(n_layers, pad64(k), pp_dtype_size(type));
}

extern "C" cudaError_t
pp_cuda_mlp_warp(cudaStream_t stream, const pp_cuda_a *x, uint32_t m, uint32_t k,
                 const pp_cuda_wide_layer *packed, unsigned n_layers, pp_dtype type, float *y)
{
  uint32_t outs[PP_MAX_WIDE];
  if (!launchable(stream, x, m, k, packed, n_layers, y, outs))
    return cudaErrorInvalidValue;
  WarpNet net = {};
  net.n = n_layers;
  net.kp = pad64(k);
  for (unsigned i = 0; i < n_layers; i++)
    net.layer[i] = packed[i];
  const size_t smem = pp_cuda_mlp_warp_smem(type, k, n_layers, outs);
  if (smem == 0)
    return cudaErrorInvalidValue;
  return type == PP_DTYPE_BF16 ? launch<__nv_bfloat16>(stream, *x, m, k, net, smem, y)
                               : launch<__half>(stream, *x, m, k, net, smem, y);
}
