// SPDX-License-Identifier: LGPL-2.1-or-later
/* The weights of the kernels that keep a model on chip, packed once a
 * model: the wide kernel's blob and the shared memory a model needs
 * (wide_layout.cuh has the geometry), and the warp kernel's image
 * (warp_layout.cuh). 16-bit weights, or floats for exact FP32 (in TF32
 * pieces where the wide kernel runs it on warpgroups, and the first
 * layer's FP16 pieces for bytes beside them), or rounded to TF32 for
 * TF32. */
#include "dtype.cuh"
#include "mma_tf32.cuh"
#include "warp_layout.cuh"

using namespace pp_wide;

namespace
{

/* Layer w (out × in) as its tiles in the order the kernel uses them: for
 * each BN-column tile, each BK-input tile, BN rows of BK, each row's
 * 16-byte chunks swizzled as they are to lie in shared memory (swz), so
 * that a tile is copied as it lies; zero past out and in; floats rounded
 * to TF32 where tf32. */
template <typename T>
__global__ void
pack_tiles(const T *__restrict__ w, uint32_t in, uint32_t out, bool tf32, T *__restrict__ dst,
           size_t count)
{
  constexpr unsigned BK = GeometryOf<T>::BK;
  const unsigned k_tiles = pad64(in) / BK;
  for (size_t e = blockIdx.x * (size_t) blockDim.x + threadIdx.x; e < count;
       e += (size_t) gridDim.x * blockDim.x) {
    const size_t tile = e / (BN * BK);
    const unsigned within = e % (BN * BK);
    const unsigned n = (unsigned) (tile / k_tiles) * BN + within / BK;
    const unsigned j = (unsigned) (tile % k_tiles) * BK + within % BK;
    T v = n < out && j < in ? w[(size_t) n * in + j] : pp::from_float<T>(0.f);
    if constexpr (sizeof(T) == 4)
      v = tf32 ? __uint_as_float(pp::to_tf32(v)) : v;
    dst[e - within + within / BK * BK + swz<T>(within / BK, within % BK)] = v;
  }
}

/* Layer w's tiles for exact FP32 on warpgroups (wide_layout.cuh,
 * PIECE_PARTS): each tile's two parts, a warpgroup's 64 columns each,
 * their high TF32 pieces (nearest, as the kernel splits its activations)
 * and then their low ones, v - hi, inputs in piece_k's order, swizzled as
 * a stage holds them. */
__global__ void
pack_pieces(const float *__restrict__ w, uint32_t in, uint32_t out, float *__restrict__ dst,
            size_t count)
{
  constexpr unsigned BK = GeometryOf<float>::BK, HALF = BN / 2 * BK; /* a piece's floats a part */
  const unsigned k_tiles = pad64(in) / BK;
  for (size_t e = blockIdx.x * (size_t) blockDim.x + threadIdx.x; e < count;
       e += (size_t) gridDim.x * blockDim.x) {
    const size_t part = e / (2 * HALF), tile = part / PIECE_PARTS;
    const unsigned within = e % (2 * HALF), piece = within / HALF, row = within % HALF / BK;
    const unsigned i = within % BK;
    const unsigned n = (unsigned) (tile / k_tiles) * BN + (unsigned) (part % 2) * (BN / 2) + row;
    const unsigned j = (unsigned) (tile % k_tiles) * BK + piece_k(i);
    const float v = n < out && j < in ? w[(size_t) n * in + j] : 0.f;
    const float hi = __uint_as_float(pp::nearest_tf32_bits(v));
    dst[e - within + piece * HALF + row * BK + swz<float>(row, i)] = piece ? v - hi : hi;
  }
}

/* The first layer's FP16 tiles for bytes (wide_layout.cuh, half_k), 64
 * inputs a row, each row its column's weights divided by the column's
 * scale: in exact FP32 (PIECE_PARTS) each tile's two parts of a
 * warpgroup's 64 columns, their nearest FP16 and then the rest's; in
 * TF32 (parts 1) a tile's 128 columns, the weights rounded to TF32 first,
 * inputs in their order (the products read A from shared memory);
 * swizzled as a stage holds them. */
__global__ void
pack_halves(const float *__restrict__ w, uint32_t in, uint32_t out,
            const float *__restrict__ scales, unsigned parts, __half *__restrict__ dst,
            size_t count)
{
  constexpr unsigned BK = GeometryOf<__half>::BK, HALF = BN / 2 * BK; /* 64 rows' */
  const unsigned k_tiles = pad64(in) / BK;
  const bool pieces = parts == PIECE_PARTS;
  for (size_t e = blockIdx.x * (size_t) blockDim.x + threadIdx.x; e < count;
       e += (size_t) gridDim.x * blockDim.x) {
    const size_t unit = e / (2 * HALF), tile = unit / parts;
    const unsigned within = e % (2 * HALF), h = within / HALF, row = within % HALF / BK;
    const unsigned i = within % BK, columns = pieces ? (unsigned) (unit % 2) : h;
    const unsigned n = (unsigned) (tile / k_tiles) * BN + columns * (BN / 2) + row;
    const unsigned j = (unsigned) (tile % k_tiles) * BK + (pieces ? half_k(i) : i);
    float v = 0.f; /* past out too: the scales stop at pad64(out), a column tile may not */
    if (n < out && j < in) {
      v = w[(size_t) n * in + j];
      v = (pieces ? v : __uint_as_float(pp::to_tf32(v))) / scales[n];
    }
    const __half hi = __float2half_rn(v);
    dst[e - within + h * HALF + row * BK + swz<__half>(row, i)] =
        pieces && h ? __float2half_rn(v - __half2float(hi)) : hi;
  }
}

/* Whether a blob of floats in `parts` stores the first layer on bytes
 * after its tiles: in exact FP32 on warpgroups, and in TF32. */
bool
has_bytes_layer(pp_dtype type, bool tf32, unsigned parts)
{
  return type == PP_DTYPE_F32 && (tf32 || parts == PIECE_PARTS);
}

/* Layer w (out × in) as the warp kernel's image holds it: D rows of kp,
 * each row's chunks swizzled (swz, its own inverse), zero past out and
 * in; floats rounded to TF32 where tf32. */
template <typename T>
__global__ void
pack_image(const T *__restrict__ w, uint32_t in, uint32_t out, uint32_t kp, bool tf32,
           T *__restrict__ dst)
{
  const size_t count = (size_t) pp_warp::D * kp;
  for (size_t e = blockIdx.x * (size_t) blockDim.x + threadIdx.x; e < count;
       e += (size_t) gridDim.x * blockDim.x) {
    const unsigned n = (unsigned) (e / kp), j = swz<T>(n, (unsigned) (e % kp));
    T v = n < out && j < in ? w[(size_t) n * in + j] : pp::from_float<T>(0.f);
    if constexpr (sizeof(T) == 4)
      v = tf32 ? __uint_as_float(pp::to_tf32(v)) : v;
    dst[e] = v;
  }
}

/* The first layer (out × in) as the warp kernel's three bf16 pieces
 * (warp_layout.cuh): D rows of kp each, swizzled as 16-bit rows are. */
__global__ void
pack_bf16_pieces(const float *__restrict__ w, uint32_t in, uint32_t out, uint32_t kp,
                 __nv_bfloat16 *__restrict__ dst)
{
  const size_t count = (size_t) pp_warp::D * kp;
  for (size_t e = blockIdx.x * (size_t) blockDim.x + threadIdx.x; e < count;
       e += (size_t) gridDim.x * blockDim.x) {
    const unsigned n = (unsigned) (e / kp), j = swz<__nv_bfloat16>(n, (unsigned) (e % kp));
    const float v = n < out && j < in ? w[(size_t) n * in + j] : 0.f;
    const __nv_bfloat16 hi = __float2bfloat16_rn(v);
    const float rest = v - __bfloat162float(hi);
    const __nv_bfloat16 mid = __float2bfloat16_rn(rest);
    dst[e] = hi;
    dst[count + e] = mid;
    dst[2 * count + e] = __float2bfloat16_rn(rest - __bfloat162float(mid));
  }
}

/* Each of the first layer's columns' sum of weights, in double, and
 * where `scales` is given its 2^−e, e the power of two that puts its
 * largest weight in [2^14, 2^15) (wide_layout.cuh, half_k; 1 for a column
 * of zeros or without a finite largest weight); zero sums and scales of
 * 1 up to pad64(out). */
__global__ void
column_stats(const float *__restrict__ w, uint32_t in, uint32_t out, float *__restrict__ sums,
             float *__restrict__ scales)
{
  const unsigned n = blockIdx.x * blockDim.x + threadIdx.x;
  if (n >= pad64(out))
    return;
  double sum = 0;
  float most = 0.f;
  for (uint32_t j = 0; n < out && j < in; j++) {
    const float v = w[(size_t) n * in + j];
    sum += v;
    most = fmaxf(most, fabsf(v));
  }
  sums[n] = (float) sum;
  if (!scales)
    return;
  int e = 0;
  if (most > 0.f && isfinite(most)) {
    frexpf(most, &e); /* 2^(e−1) ≤ most < 2^e */
    e = min(max(15 - e, -126), 126);
  }
  scales[n] = ldexpf(1.f, -e);
}

/* One layer's tiles packed into dst, on `stream`, in `parts`. */
template <typename T>
void
pack_layer(cudaStream_t stream, const pp_cuda_wide_layer &l, bool tf32, unsigned parts, T *dst,
           size_t count)
{
  const unsigned blocks = (unsigned) ((count + 255) / 256 < 1024 ? (count + 255) / 256 : 1024);
  if constexpr (sizeof(T) == 4)
    if (parts == PIECE_PARTS) {
      pack_pieces<<<blocks, 256, 0, stream>>>(static_cast<const T *>(l.w), l.in, l.out, dst, count);
      return;
    }
  pack_tiles<<<blocks, 256, 0, stream>>>(static_cast<const T *>(l.w), l.in, l.out, tf32, dst,
                                         count);
}

/* Whether a packer's arguments hold together. */
bool
packable(cudaStream_t stream, pp_dtype type, const pp_cuda_wide_layer *layers, unsigned n_layers,
         const void *blob, const pp_cuda_wide_layer *packed)
{
  return stream && layers && blob && packed && n_layers >= 2 && n_layers <= PP_MAX_WIDE &&
         type < PP_N_DTYPES;
}

} // namespace

extern "C" size_t
pp_cuda_mlp_wide_smem(pp_dtype type, uint32_t k, unsigned n_layers, const uint32_t *outs)
{
  if (!takes(k, n_layers, outs, PP_WIDE_MAX_D))
    return 0;
  pp_cuda_wide_layer layers[PP_MAX_WIDE] = {};
  for (unsigned i = 0; i < n_layers; i++) {
    layers[i].in = i ? outs[i - 1] : k;
    layers[i].out = outs[i];
  }
  return smem_bytes(net_for(layers, n_layers, pp_dtype_size(type)), pp_dtype_size(type), 2);
}

extern "C" size_t
pp_cuda_wide_packed_bytes(pp_dtype type, bool tf32, const pp_cuda_wide_layer *layers,
                          unsigned n_layers)
{
  unsigned parts = 1;
  if (tile_parts(type, tf32, &parts) != cudaSuccess)
    parts = PIECE_PARTS; /* the most it may be: the packer reports the error */
  size_t tiles = 0;
  for (unsigned i = 0; i + 1 < n_layers; i++)
    tiles += n_tiles(layers[i], pp_dtype_size(type), parts);
  return tiles * BN * TILE_ROW_BYTES +
         (has_bytes_layer(type, tf32, parts) ? bytes_layer_bytes(layers[0], parts) : 0);
}

extern "C" cudaError_t
pp_cuda_wide_pack(cudaStream_t stream, pp_dtype type, bool tf32, const pp_cuda_wide_layer *layers,
                  unsigned n_layers, void *blob, pp_cuda_wide_layer *packed)
{
  if (!packable(stream, type, layers, n_layers, blob, packed))
    return cudaErrorInvalidValue;
  const size_t elem = pp_dtype_size(type);
  unsigned parts = 1;
  const cudaError_t err = tile_parts(type, tf32, &parts);
  if (err != cudaSuccess)
    return err;
  size_t at = 0; /* bytes */
  for (unsigned i = 0; i < n_layers; i++) {
    packed[i] = layers[i];
    if (i + 1 == n_layers)
      break;
    const size_t count = (size_t) n_tiles(layers[i], elem, parts) * BN * TILE_ROW_BYTES / elem;
    void *dst = static_cast<uint8_t *>(blob) + at;
    PP_DTYPE_DISPATCH(type, T,
                      pack_layer(stream, layers[i], tf32, parts, static_cast<T *>(dst), count));
    packed[i].w = dst;
    at += count * elem;
  }
  if (has_bytes_layer(type, tf32, parts)) {
    const pp_cuda_wide_layer &first = layers[0];
    const float *w0 = static_cast<const float *>(first.w);
    float *sums = reinterpret_cast<float *>(static_cast<uint8_t *>(blob) + at);
    float *scales = sums + pad64(first.out);
    const unsigned blocks = (pad64(first.out) + 127) / 128;
    column_stats<<<blocks, 128, 0, stream>>>(w0, first.in, first.out, sums, scales);
    const size_t halves =
        (size_t) n_tiles(first, sizeof(__half), parts) * BN * TILE_ROW_BYTES / sizeof(__half);
    pack_halves<<<(unsigned) ((halves + 255) / 256), 256, 0, stream>>>(
        w0, first.in, first.out, scales, parts,
        reinterpret_cast<__half *>(reinterpret_cast<uint8_t *>(scales + pad64(first.out))), halves);
  }
  return cudaGetLastError();
}

extern "C" size_t
pp_cuda_warp_packed_bytes(pp_dtype type, bool tf32, const pp_cuda_wide_layer *layers,
                          unsigned n_layers)
{
  return n_layers < 2 ? 0 : pp_warp::packed_bytes(type, tf32, n_layers, pad64(layers[0].in));
}

extern "C" cudaError_t
pp_cuda_warp_pack(cudaStream_t stream, pp_dtype type, bool tf32, const pp_cuda_wide_layer *layers,
                  unsigned n_layers, void *blob, pp_cuda_wide_layer *packed)
{
  if (!packable(stream, type, layers, n_layers, blob, packed))
    return cudaErrorInvalidValue;
  const uint32_t kp = pad64(layers[0].in);
  for (unsigned i = 0; i < n_layers; i++) {
    packed[i] = layers[i];
    if (i + 1 == n_layers)
      break;
    if (layers[i].out > pp_warp::D || (i > 0 && layers[i].in != layers[i - 1].out))
      return cudaErrorInvalidValue;
    const uint32_t ld = i ? pp_warp::D : kp;
    const size_t at = pp_warp::w_offset(i, kp) * pp_dtype_size(type);
    void *dst = static_cast<uint8_t *>(blob) + at;
    PP_DTYPE_DISPATCH(type, T,
                      pack_image<<<(pp_warp::D * ld + 255) / 256, 256, 0, stream>>>(
                          static_cast<const T *>(layers[i].w), layers[i].in, layers[i].out, ld,
                          tf32, static_cast<T *>(dst)));
    packed[i].w = dst;
  }
  if (pp_warp::has_sums(type, tf32)) {
    const float *w0 = static_cast<const float *>(layers[0].w);
    uint8_t *at = static_cast<uint8_t *>(blob);
    column_stats<<<1, pp_warp::D, 0, stream>>>(
        w0, layers[0].in, layers[0].out,
        reinterpret_cast<float *>(at + pp_warp::w_offset(n_layers - 1, kp) * sizeof(float)),
        nullptr);
    pack_bf16_pieces<<<(pp_warp::D * kp + 255) / 256, 256, 0, stream>>>(
        w0, layers[0].in, layers[0].out, kp,
        reinterpret_cast<__nv_bfloat16 *>(at + pp_warp::pieces_at(n_layers, kp)));
  }
  return cudaGetLastError();
}
