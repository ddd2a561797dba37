// SPDX-License-Identifier: LGPL-2.1-or-later
/* C-callable launchers for the CUDA kernels. Each takes its stream
 * explicitly, checks its shapes (cudaErrorInvalidValue), launches, and
 * returns cudaGetLastError(). Nothing here touches the default stream.
 *
 * Matrices are row-major. X (N×K) is read through pp_cuda_a, which gathers it
 * straight from frame bytes (x/255 happens in the loads, so frames cross
 * PCIe as bytes) or reads floats. Weights are stored transposed and padded
 * for the GEMMs: Wt is K×ldw with ldw = round_up(out, 4), zero past `out`. */
#ifndef PP_CUDA_KERNELS_H
#define PP_CUDA_KERNELS_H

#include <cuda_runtime_api.h>
#include <stdbool.h>
#include <stdint.h>

#include "activation.h"
#include "dtype.h"
#include "frame_layout.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  PP_A_F32,       /* floats, row stride `ld` */
  PP_A_U8_VEC4,   /* bytes, every aligned group of 4 inputs is 4 contiguous bytes */
  PP_A_U8_GATHER, /* bytes, any layout */
  PP_A_YUV,       /* R,G,B from a YUV frame's Y, U and V samples */
} pp_a_kind;

/* Where X[n][k] lives: floats at data[n*ld + k], or the byte at
 *   data + origin(n) + k_offset[k],
 *   origin(n) = (n / per_row) * row_step + (n % per_row) * col_step,
 * read as byte·scale + bias. For YUV, origin(n) is sample n's first pixel
 * (x0, y0) = ((n % per_row) * col_step, (n / per_row) * row_step) and
 * k_offset[k] packs that input's pixel offset and channel (PP_YUV_ENTRY). */
typedef struct {
  pp_a_kind kind;
  const void *data;
  uint32_t ld;
  const int32_t *k_offset; /* device, K entries (bytes only) */
  uint32_t per_row, row_step, col_step;
  float scale, bias;
  pp_yuv yuv;
} pp_cuda_a;

/* A YUV input's pixel (dx, dy) from its sample's first pixel, and channel. */
#define PP_YUV_ENTRY(dx, dy, c) ((int32_t) ((dx) | ((dy) << 15) | ((uint32_t) (c) << 30)))
#define PP_YUV_DX(e) ((uint32_t) (e) &0x7fffu)
#define PP_YUV_DY(e) (((uint32_t) (e) >> 15) & 0x7fffu)
#define PP_YUV_C(e) ((uint32_t) (e) >> 30)

/* Round `n` up to a multiple of 4: the padded leading dimension of Wt. */
static inline uint32_t
pp_cuda_pad4(uint32_t n)
{
  return (n + 3u) & ~3u;
}

/* Whether layers of these widths make an MLP a one-kernel path takes:
 * min_layers to max_layers layers, every hidden one 1 to max_d wide, and
 * one output (the chain, wide and warp kernels each with their bounds). */
static inline bool
pp_cuda_one_output_fits(unsigned n_layers, const uint32_t *outs, unsigned min_layers,
                        unsigned max_layers, uint32_t max_d)
{
  if (n_layers < min_layers || n_layers > max_layers || outs[n_layers - 1] != 1)
    return false;
  for (unsigned i = 0; i + 1 < n_layers; i++)
    if (outs[i] == 0 || outs[i] > max_d)
      return false;
  return true;
}

/* ---- GEMM: C[m×n] = act(X[m×k] · W + bias), W given as Wt (k×ldw) ---- */

typedef enum {
  PP_TILE_128x128, /* large problems */
  PP_TILE_64x64,   /* more blocks for problems that would leave SMs idle */
  PP_N_GEMM_TILES,
} pp_gemm_tile;

cudaError_t pp_cuda_gemm(cudaStream_t stream, const pp_cuda_a *x, uint32_t m, uint32_t k,
                         const float *wt, uint32_t ldw, const float *bias, uint32_t n, pp_act act,
                         float *c, uint32_t ldc, pp_gemm_tile tile);

/* ---- A two-layer MLP in one kernel, for O = 1 and D ≤ 256 -------------
 * y[i] = out_act(hidden_act(X[i]·W0ᵀ + b0) · w1 + b1): a block owns whole
 * rows of H, so H never leaves registers. */

typedef enum {
  PP_FUSED_D64,  /* D ≤ 64: 256-row blocks */
  PP_FUSED_D128, /* D ≤ 128: 128-row blocks */
  PP_FUSED_D256, /* D ≤ 256: 64-row blocks */
  PP_N_FUSED_TILES,
} pp_fused_tile;

/* The smallest tile that covers `d`, or PP_N_FUSED_TILES when d > 256. */
pp_fused_tile pp_cuda_fused_tile_for(uint32_t d);

cudaError_t pp_cuda_mlp_fused(cudaStream_t stream, const pp_cuda_a *x, uint32_t m, uint32_t k,
                              const float *w0t, uint32_t ldw, const float *b0, uint32_t d,
                              pp_act hidden_act, const float *w1, const float *b1, pp_act out_act,
                              float *y, pp_fused_tile tile);

/* ---- An MLP of any depth in one kernel, hidden layers ≤ 64 wide, O = 1 --
 * Every layer on the tensor cores, its activations on chip (mlp_chain.cu).
 * Layer 0 is read as the GEMM reads it (wt, in × ldw); the others as stored
 * (w, out × in). */

#define PP_CHAIN_MAX_D 64
#define PP_MAX_CHAIN 8

typedef struct {
  const float *w;  /* out × in (layers after the first) */
  const float *wt; /* in × ldw, zero past out (the first layer) */
  const float *b;  /* NULL: no bias */
  uint32_t in, out, ldw;
  pp_act act;
} pp_cuda_chain_layer;

/* Whether a model of these layer widths runs as one chain kernel: 3 to 8
 * layers, every hidden one 1..64 wide, one output. */
bool pp_cuda_mlp_chain_fits(unsigned n_layers, const uint32_t *outs);

/* Exact FP32 as TF32 pieces, or TF32 itself where `tf32`. */
cudaError_t pp_cuda_mlp_chain(cudaStream_t stream, const pp_cuda_a *x, uint32_t m, uint32_t k,
                              const pp_cuda_chain_layer *layers, unsigned n_layers, bool tf32,
                              float *y);

/* ---- An MLP in one kernel, hidden layers ≤ 512 wide, O = 1 --------------
 * (mlp_wide.cu): every hidden layer on the tensor cores, a block's
 * activations in shared memory, the weights streamed in tiles from one
 * packed blob; bf16, f16, or floats as TF32 or exact FP32. Layers as
 * stored (w, out × in of the type; the last layer's in floats, as the
 * row-dot kernel reads it), packed once by pp_cuda_wide_pack into the
 * layout the kernel reads. */

#define PP_WIDE_MAX_D 512
#define PP_MAX_WIDE 8

typedef struct {
  const void *w;  /* out × in: the type (hidden layers), floats (the last) */
  const float *b; /* NULL: no bias; the type's values as floats */
  uint32_t in, out;
  pp_act act;
} pp_cuda_wide_layer;

/* The least shared memory a block needs for a model of these widths (k
 * inputs) in `type`, with two weight tiles in flight (the launcher takes
 * three where the device has room); 0 when the kernel does not take it (2
 * to 8 layers, hidden ones 1..512 wide, one output). The model
 * fits where this is non-zero and at most the device's opt-in limit a
 * block. */
size_t pp_cuda_mlp_wide_smem(pp_dtype type, uint32_t k, unsigned n_layers, const uint32_t *outs);

/* Bytes of the packed blob for the current device: every hidden layer's W
 * as the kernel's weight tiles, in the order it uses them, padded with
 * zeros (at PP_DTYPE_F32 without `tf32`, on sm_90a, twice the floats: each
 * weight's two TF32 pieces, and then the first layer's column sums). */
size_t pp_cuda_wide_packed_bytes(pp_dtype type, bool tf32, const pp_cuda_wide_layer *layers,
                                 unsigned n_layers);
/* Packs `layers` into `blob` on `stream` (a kernel on the device);
 * `packed` gets the layers as the kernel reads them. At PP_DTYPE_F32 the
 * weights are rounded to TF32 where `tf32`, as the kernel's TF32 reads
 * them, else kept, or on sm_90a split into pieces (a blob for the one is
 * not a blob for the other, nor for another device). */
cudaError_t pp_cuda_wide_pack(cudaStream_t stream, pp_dtype type, bool tf32,
                              const pp_cuda_wide_layer *layers, unsigned n_layers, void *blob,
                              pp_cuda_wide_layer *packed);

/* At PP_DTYPE_F32, TF32 products where `tf32` (`packed` packed with
 * tf32), else exact FP32 from three TF32 products of pieces
 * (mma_tf32.cuh); 16-bit types ignore `tf32`. */
cudaError_t pp_cuda_mlp_wide(cudaStream_t stream, const pp_cuda_a *x, uint32_t m, uint32_t k,
                             const pp_cuda_wide_layer *packed, unsigned n_layers, pp_dtype type,
                             bool tf32, float *y);

/* ---- An MLP in one kernel, hidden layers ≤ 64 wide, O = 1 (mlp_warp.cu):
 * each warp carries its rows through every layer in registers, the
 * model's hidden weights in shared memory, at bf16, fp16, TF32 or exact
 * FP32 (as pp_cuda_mlp_wide's `tf32`). */

#define PP_WARP_MAX_D 64

/* The shared memory a block needs for a model of these widths (k inputs)
 * in `type`; 0 when the kernel does not take it (2 to 8 layers, hidden
 * ones 1..64 wide, one output). The model fits where this is non-zero and
 * at most the device's opt-in limit a block. */
size_t pp_cuda_mlp_warp_smem(pp_dtype type, uint32_t k, unsigned n_layers, const uint32_t *outs);

/* Bytes of the kernel's packed weights: every hidden layer's W as a block
 * copies it into shared memory (and at PP_DTYPE_F32 without `tf32`, the
 * first layer's column sums and its W again in three bf16 pieces). */
size_t pp_cuda_warp_packed_bytes(pp_dtype type, bool tf32, const pp_cuda_wide_layer *layers,
                                 unsigned n_layers);
/* Packs `layers` (hidden ones at most PP_WARP_MAX_D wide) into `blob` on
 * `stream`; `packed` gets the layers as the kernel reads them. At
 * PP_DTYPE_F32 the weights are rounded to TF32 where `tf32`, else kept
 * and followed by the sums and pieces exact FP32 reads: pp_cuda_mlp_warp
 * takes the `tf32` the blob was packed with (a blob for the one is not a
 * blob for the other). */
cudaError_t pp_cuda_warp_pack(cudaStream_t stream, pp_dtype type, bool tf32,
                              const pp_cuda_wide_layer *layers, unsigned n_layers, void *blob,
                              pp_cuda_wide_layer *packed);

cudaError_t pp_cuda_mlp_warp(cudaStream_t stream, const pp_cuda_a *x, uint32_t m, uint32_t k,
                             const pp_cuda_wide_layer *packed, unsigned n_layers, pp_dtype type,
                             bool tf32, float *y);

/* ---- A frame's done signal ---------------------------------------------
 * When a kernel does a frame's whole work, its last block to finish writes
 * `seq` to `flag` (host memory the device can write: pinned and mapped)
 * after every block's results are visible to the host; `count` (device,
 * zero before the first frame) counts the blocks and is left at zero. One
 * signal per stream: frames take turns on it. */
typedef struct {
  unsigned *count;
  volatile unsigned *flag;
  unsigned seq;
} pp_cuda_done_signal;

/* ---- A two-layer MLP for small frames, over many blocks ---------------
 * y[i][o] = out_act(hidden_act(X[i]·W0ᵀ + b0) · w1[o] + b1[o]) for
 * D ≤ PP_SMALL_MAX_D and O ≤ PP_ROWDOT_MAX_O; w1 is O×D row-major; W0ᵀ
 * is read as float4s, so ldw is a multiple of 4 and w0t 16-byte aligned
 * (cudaMalloc's are). Each block owns `rows_per_block` rows (1, 2, 4 or
 * 8), so a 256-row frame runs on 32-256 blocks instead of the one to four
 * of the tiled kernels. `done` (or NULL): the frame's done signal. */
#define PP_SMALL_MAX_D 256
#define PP_SMALL_ROW_CHOICES 4 /* rows_per_block = 1 << i, i < this */

cudaError_t pp_cuda_mlp_small(cudaStream_t stream, const pp_cuda_a *x, uint32_t m, uint32_t k,
                              const float *w0t, uint32_t ldw, const float *b0, uint32_t d,
                              pp_act hidden_act, const float *w1, const float *b1, uint32_t o,
                              pp_act out_act, float *y, uint32_t rows_per_block,
                              const pp_cuda_done_signal *done);

/* ---- A last layer with small O: y[i][o] = act(h[i]·w1[o] + b1[o]) -----
 * One warp per row; h of `type`, w1 O×D row-major floats; O ≤
 * PP_ROWDOT_MAX_O (O = 1 is the MatVec); y floats, summed in float32. */
#define PP_ROWDOT_MAX_O 32

cudaError_t pp_cuda_rowdot(cudaStream_t stream, const void *h, pp_dtype type, uint32_t m,
                           uint32_t d, uint32_t ldh, const float *w1, const float *b1, uint32_t o,
                           pp_act act, float *y);

/* ---- FP32 from 16- and 19-bit tensor cores, for a first layer --------
 * (split_pieces.cu says why it is exact.) The layer's W (n×k, nn.Linear's
 * layout) becomes `pieces` matrices of pp_cuda_split_type, TF32 (held in
 * floats) or FP16, laid side by side along K in pp_cuda_split_blocks
 * blocks, each padded to pp_cuda_split_kp(k) columns: w_split is n ×
 * blocks·kp of the type. A frame of bytes is exact in either: each block
 * pairs it with one of W's pieces, the frame's scale folded into W and
 * b_split the bias that the centring and the frame's bias move it by; a
 * frame of floats (YUV, tensors) is split into pieces too, and the blocks
 * pair X's with W's. x: m × blocks·kp of the type. Then cuBLASLt's GEMM
 * of x and w_split at `alpha`, with b_split, is the layer's GEMM, its
 * products exact and its sums in FP32 (the tensor cores truncate: error
 * 3.1e-6 against FP32's 6.8e-7 on seed's first layer in TF32). */
#define PP_SPLIT_MAX_PIECES 3

uint32_t pp_cuda_split_kp(uint32_t k);
/* Whether `a` reads bytes, exact as they are (else floats, split). */
bool pp_cuda_split_exact_x(const pp_cuda_a *a);
/* Blocks along K of x and w_split. */
uint32_t pp_cuda_split_blocks(uint32_t pieces, bool exact_x);
/* The pieces' type for frames read by `a`: FP16 in exact FP32 (pieces ≥ 2)
 * of bytes and YUV, whose values have a bound; else TF32, in floats. */
pp_dtype pp_cuda_split_type(const pp_cuda_a *a, uint32_t pieces);
/* W's pieces for frames read by `a` (its scale and bias, for bytes), and
 * the GEMM's *alpha: 1 in TF32, in FP16 the inverse of the powers of two
 * that scale W and X into FP16's range. In FP16 it waits for `stream`:
 * the layer's largest weight sets W's scale. */
cudaError_t pp_cuda_split_weights(cudaStream_t stream, const float *w, uint32_t n, uint32_t k,
                                  uint32_t pieces, const pp_cuda_a *a, const float *b,
                                  void *w_split, float *b_split, float *alpha);
/* X in blocks as pp_cuda_split_weights lays W for the same `a`. */
cudaError_t pp_cuda_split_convert(cudaStream_t stream, const pp_cuda_a *a, uint32_t m, uint32_t k,
                                  uint32_t pieces, void *x);

/* ---- Element-wise ------------------------------------------------------ */

/* x[m×k] (row stride ldx) = X as `type`: the conversion on its own, for
 * GEMMs that read only their element type (cuBLAS). */
cudaError_t pp_cuda_convert(cudaStream_t stream, const pp_cuda_a *a, uint32_t m, uint32_t k,
                            void *x, uint32_t ldx, pp_dtype type);

/* dst[count] = src rounded to `to` (as pp_dtype_round does), stored as
 * `to` or, with as_floats, as floats holding those values. */
cudaError_t pp_cuda_cast(cudaStream_t stream, const float *src, size_t count, pp_dtype to,
                         bool as_floats, void *dst);

/* rows × row_bytes from src (row pitch spitch) to dst (dpitch), both in
 * device memory; 16-byte moves when everything is 16-byte aligned. */
cudaError_t pp_cuda_copy_2d(cudaStream_t stream, void *dst, size_t dpitch, const void *src,
                            size_t spitch, size_t row_bytes, size_t rows);

/* Keeps the stream busy for `microseconds`: put before a region timed with
 * events so the CPU's launches finish before the GPU reaches it. */
cudaError_t pp_cuda_spin(cudaStream_t stream, uint32_t microseconds);

/* c[m×n] = act(c + bias) in place, c of `type` (summed in float, stored
 * rounded); bias may be NULL. */
cudaError_t pp_cuda_bias_act(cudaStream_t stream, void *c, pp_dtype type, uint32_t m, uint32_t n,
                             uint32_t ldc, const float *bias, pp_act act);

#ifdef __cplusplus
}
#endif

#endif
