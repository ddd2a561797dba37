// SPDX-License-Identifier: LGPL-2.1-or-later
/* The warp kernel: an MLP of 2 to 8 layers whose hidden layers are at
 * most 64 wide and whose output is one value, in one launch, each warp
 * carrying its 16 rows through every layer in its registers: at a 16-bit
 * precision, in TF32, or in exact FP32 (TF32 pieces, mma_tf32.cuh). A
 * layer's sums come out of mma.sync in the very fragments the next
 * layer's product takes as A, so once the frame's rows are in shared
 * memory no activation is stored anywhere. The block copies the model's
 * hidden weights into shared memory once, as its packer laid them
 * (warp_layout.cuh), beside its rows of the frame.
 *
 * It rounds where the wide kernel rounds: the frame to the 16-bit type or
 * to TF32 as it is loaded; each hidden layer's acc + b, then the
 * activation of that; the last layer is each row's dot product in FP32.
 * Exact FP32 rounds nowhere: each operand is split into two TF32 pieces as
 * it is read (three products, hi·hi + hi·lo + lo·hi); a frame's bytes,
 * which bf16 holds, are multiplied as they are, by the first layer's
 * weights in three bf16 pieces (warp_layout.cuh; from rows the reader
 * gathers, by their two TF32 pieces), the reader's scale and bias after,
 * from the packer's column sums. At 16 bits, with the
 * same sums in the same k order, the hidden layers give the wide kernel's
 * values bit for bit; only the last sum's order differs.
 *
 * The wide kernel runs narrow's shape (192-64-64-64-64-1) with half its
 * warps idle on 64-wide layers and each layer's activations through
 * shared memory; this kernel has no idle warp and, at 16 bits, 96 KB a
 * block, two blocks an SM, all of a 1080p frame's rows in one wave. In
 * floats a block is one an SM: from a frame's bytes sixteen warps, the
 * rows kept as bytes (narrow: 149 KB), from other frames eight, the rows
 * as floats (192 KB); warp_layout.cuh says why. Its fragments:
 * warp_fragments.cuh; its rows of bytes: warp_byte_rows.cuh. */
#include "frame_rows.cuh"
#include "kernel_on_device.cuh"
#include "warp_byte_rows.cuh"

using namespace pp_warp;
using pp_wide::pad64;

namespace
{

struct WarpNet {
  pp_cuda_wide_layer layer[PP_MAX_WIDE]; /* w: each hidden layer's image */
  unsigned n;
  uint32_t kp;        /* the first layer's inputs, padded: the frame rows' stride */
  const float *sums;  /* exact FP32: the first layer's column sums */
  const void *pieces; /* exact FP32: the first layer in bf16 pieces */
};

/* `bytes` (a multiple of 16) from global memory into shared, as they lie. */
template <int THREADS>
__device__ __forceinline__ void
copy_as_is(unsigned char *dst, const void *src, size_t bytes)
{
  const unsigned char *from = static_cast<const unsigned char *>(src);
  for (size_t c = threadIdx.x * (size_t) 16; c < bytes; c += THREADS * (size_t) 16)
    pp::cp_async16(dst + c, from + c);
}

/* The weights into shared memory as the packer laid them, in two groups:
 * the first layer's (`first` bytes: its floats' or T's, or its pieces
 * where PIECES), which the block needs first, and then the others'. */
template <int THREADS, bool PIECES, typename T>
__device__ __forceinline__ void
load_weights(const WarpNet &net, unsigned char *w_s, size_t first)
{
  const unsigned char *image = static_cast<const unsigned char *>(net.layer[0].w);
  const size_t floats = (size_t) D * net.kp * sizeof(T);
  copy_as_is<THREADS>(w_s, PIECES ? net.pieces : image, first);
  asm volatile("cp.async.commit_group;" ::: "memory");
  copy_as_is<THREADS>(w_s + first, image + floats,
                      (w_offset(net.n - 1, net.kp) - w_offset(1, net.kp)) * sizeof(T));
  asm volatile("cp.async.commit_group;" ::: "memory");
}

template <typename T, int PASSES, bool BYTE_ROWS>
__global__ void
__launch_bounds__(Block<T, BYTE_ROWS>::THREADS, Block<T, BYTE_ROWS>::MIN_BLOCKS)
    mlp_warp(const pp_cuda_a x, unsigned m, unsigned k, const WarpNet net, float *__restrict__ y)
{
  using S = Steps<T>;
  using B = Block<T, BYTE_ROWS>;
  constexpr int CHUNK = S::CHUNK, KSTEP = S::KSTEP, KS = S::KS;
  /* Exact FP32's first layer on rows of bytes: its bf16 pieces. */
  constexpr bool PIECES = BYTE_ROWS && PASSES == 3;
  extern __shared__ __align__(128) unsigned char smem[];
  const size_t first_bytes = PIECES ? pieces_bytes(net.kp) : (size_t) D * net.kp * sizeof(T);
  T *const w_s = reinterpret_cast<T *>(smem);
  /* The other layers' weights, layer i's w_offset(i) - w_offset(1) on. */
  T *const others = reinterpret_cast<T *>(smem + first_bytes);
  T *const x_s = others + (w_offset(net.n - 1, net.kp) - w_offset(1, net.kp));
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const unsigned m0 = blockIdx.x * B::BM;
  /* Exact FP32 multiplies a frame's bytes as they are. */
  const bool bytes =
      PASSES == 3 && (x.kind == PP_A_U8_VEC4 || x.kind == PP_A_U8_GATHER) && net.sums;
  pp_cuda_a raw = x;
  if (bytes) {
    raw.scale = 1.f;
    raw.bias = 0.f;
  }

  /* Rows of bytes copy with the first layer's weights; rows converted
   * are loaded while the weights copy. */
  uint32_t *const x_words = reinterpret_cast<uint32_t *>(x_s);
  if constexpr (BYTE_ROWS)
    copy_byte_rows<B::BM, B::THREADS>(x, m, k, m0, net.kp, x_words);
  load_weights<B::THREADS, PIECES, T>(net, smem, first_bytes);
  if constexpr (!BYTE_ROWS)
    pp_wide::load_rows<B::BM, B::THREADS, PASSES == 1>(raw, m, k, m0, x_s, net.kp);
  asm volatile("cp.async.wait_group 1;" ::: "memory"); /* the first layer's weights (and rows) */
  __syncthreads();

  uint32_t a[KS][4];
  float acc[NT][4] = {};
  uint32_t bf[NT][2];
  /* The first layer: A from this warp's rows of the frame. */
  auto first = [&](auto exact) {
    const T *rows = x_s + (warp * ROWS + lane % 16) * net.kp;
    for (unsigned k0 = 0; k0 < net.kp; k0 += KSTEP) {
      uint32_t af[4];
      pp::ldsm_x4(af, rows + ((k0 / CHUNK + lane / 16) ^ (lane & 7u)) * CHUNK);
      b_fragments<sizeof(T) == 4>(bf, w_s, net.kp, k0, lane);
      multiply<T, PASSES, decltype(exact)::value>(acc, af, bf);
    }
  };
  if constexpr (BYTE_ROWS) {
    if constexpr (PIECES)
      first_in_pieces(acc, x, net.kp, net.sums, reinterpret_cast<const __nv_bfloat16 *>(smem),
                      x_words, warp * ROWS + lane / 4, lane);
    else
      first_from_bytes(acc, x, net.kp, reinterpret_cast<const float *>(smem), x_words,
                       warp * ROWS + lane / 4, lane);
  } else if (bytes) {
    first(std::true_type{});
    from_bytes(acc, x.scale, x.bias, net.sums, lane);
  } else {
    first(std::false_type{});
  }
  asm volatile("cp.async.wait_group 0;" ::: "memory"); /* the other layers' */
  __syncthreads();
  pp::with_act(net.layer[0].act.kind, [&](auto kind) {
    to_fragments<T, PASSES, decltype(kind)::value>(acc, net.layer[0], a, lane);
  });
  /* The other hidden layers: A is the layer before's output. */
  for (unsigned li = 1; li + 1 < net.n; li++) {
    const T *w = others + (w_offset(li, net.kp) - w_offset(1, net.kp));
#pragma unroll
    for (int nt = 0; nt < NT; nt++)
      acc[nt][0] = acc[nt][1] = acc[nt][2] = acc[nt][3] = 0.f;
#pragma unroll
    for (int ks = 0; ks < KS; ks++) {
      b_fragments<sizeof(T) == 4>(bf, w, D, ks * KSTEP, lane);
      multiply<T, PASSES>(acc, a[ks], bf);
    }
    pp::with_act(net.layer[li].act.kind, [&](auto kind) {
      to_fragments<T, PASSES, decltype(kind)::value>(acc, net.layer[li], a, lane);
    });
  }

  /* The last layer: rows g and g + 8, each lane's D / 4 columns, then
   * the four lanes of a row summed. A's value r is row g + 8 (r % 2) at
   * 16 bits' inputs 2t, 2t + 1 of half r / 2 of the k-step, in TF32's
   * input t + 4 (r / 2). */
  const pp_cuda_wide_layer &last = net.layer[net.n - 1];
  const float *w = static_cast<const float *>(last.w);
  const int g = lane / 4, t = lane % 4;
  float sum[2] = { 0.f, 0.f };
#pragma unroll
  for (int ks = 0; ks < KS; ks++)
#pragma unroll
    for (int r = 0; r < 4; r++)
#pragma unroll
      for (int j = 0; j < (sizeof(T) == 2 ? 2 : 1); j++) {
        const unsigned col =
            sizeof(T) == 2 ? ks * 16 + (r / 2) * 8 + 2 * t + j : ks * 8 + t + 4 * (r / 2);
        const float wc = col < last.in ? __ldg(w + col) : 0.f;
        sum[r % 2] = fmaf(a_value<T>(a[ks], r, j), wc, sum[r % 2]);
      }
#pragma unroll
  for (int half = 0; half < 2; half++) {
    sum[half] += __shfl_xor_sync(0xffffffffu, sum[half], 1);
    sum[half] += __shfl_xor_sync(0xffffffffu, sum[half], 2);
    const unsigned row = m0 + warp * ROWS + g + 8 * half;
    if (t == 0 && row < m)
      y[row] = pp::activate<pp::ACT_ANY>(last.act, sum[half] + (last.b ? __ldg(last.b) : 0.f));
  }
}

template <typename T, int PASSES, bool BYTE_ROWS = false>
cudaError_t
launch(cudaStream_t stream, const pp_cuda_a &x, uint32_t m, uint32_t k, const WarpNet &net,
       size_t smem, float *y)
{
  using B = Block<T, BYTE_ROWS>;
  int limit = 0;
  cudaError_t err = pp::allow_smem<mlp_warp<T, PASSES, BYTE_ROWS>>(&limit);
  if (err != cudaSuccess)
    return err;
  if (smem > (size_t) limit)
    return cudaErrorInvalidValue;
  mlp_warp<T, PASSES, BYTE_ROWS>
      <<<(m + B::BM - 1) / B::BM, B::THREADS, smem, stream>>>(x, m, k, net, y);
  return cudaGetLastError();
}

/* Floats: from a frame's bytes, rows of bytes (Block). */
template <int PASSES>
cudaError_t
launch_floats(cudaStream_t stream, const pp_cuda_a &x, uint32_t m, uint32_t k, const WarpNet &net,
              size_t smem, float *y)
{
  if (x.kind == PP_A_U8_VEC4 && net.kp / 4 <= (uint32_t) Block<float, true>::THREADS)
    return launch<float, PASSES, true>(
        stream, x, m, k, net, smem_bytes(PP_DTYPE_F32, net.n, net.kp, true, PASSES == 3), y);
  return launch<float, PASSES>(stream, x, m, k, net, smem, y);
}

} // namespace

extern "C" size_t
pp_cuda_mlp_warp_smem(pp_dtype type, uint32_t k, unsigned n_layers, const uint32_t *outs)
{
  if (type >= PP_N_DTYPES || !pp_wide::takes(k, n_layers, outs, D))
    return 0;
  return smem_bytes(type, n_layers, pad64(k));
}

extern "C" cudaError_t
pp_cuda_mlp_warp(cudaStream_t stream, const pp_cuda_a *x, uint32_t m, uint32_t k,
                 const pp_cuda_wide_layer *packed, unsigned n_layers, pp_dtype type, bool tf32,
                 float *y)
{
  uint32_t outs[PP_MAX_WIDE];
  if (!pp_wide::launchable(stream, x, m, k, packed, n_layers, y, outs))
    return cudaErrorInvalidValue;
  const size_t smem = pp_cuda_mlp_warp_smem(type, k, n_layers, outs);
  if (smem == 0)
    return cudaErrorInvalidValue;
  WarpNet net = {};
  net.n = n_layers;
  net.kp = pad64(k);
  const uint8_t *image = static_cast<const uint8_t *>(packed[0].w);
  for (unsigned i = 0; i < n_layers; i++) {
    net.layer[i] = packed[i];
    /* The hidden layers where pp_cuda_warp_pack put them. */
    if (i + 1 < n_layers && packed[i].w != image + w_offset(i, net.kp) * pp_dtype_size(type))
      return cudaErrorInvalidValue;
  }
  if (has_sums(type, tf32)) {
    net.sums = reinterpret_cast<const float *>(image + w_offset(n_layers - 1, net.kp) * 4);
    net.pieces = image + pieces_at(n_layers, net.kp);
  }
  switch (type) {
    case PP_DTYPE_BF16:
      return launch<__nv_bfloat16, 1>(stream, *x, m, k, net, smem, y);
    case PP_DTYPE_F16:
      return launch<__half, 1>(stream, *x, m, k, net, smem, y);
    default:
      return tf32 ? launch_floats<1>(stream, *x, m, k, net, smem, y)
                  : launch_floats<3>(stream, *x, m, k, net, smem, y);
  }
}
