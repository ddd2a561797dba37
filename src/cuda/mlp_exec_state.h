/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The executor's state, shared by its three files: mlp_exec.c (set-up),
 * mlp_run.c (running) and mlp_gemms.c (its cuBLASLt GEMMs and split
 * weights). */
#ifndef PP_CUDA_MLP_EXEC_STATE_H
#define PP_CUDA_MLP_EXEC_STATE_H

#include <glib.h>

#include "lt_table.h"
#include "mlp_exec.h"

/* One cuBLASLt GEMM, made for what a plan names: layer `layer` on `path`
 * (cublas, or split in `pieces`) over `rows` samples with `algo`. */
typedef struct {
  unsigned layer;
  pp_cuda_path path;
  unsigned pieces;
  uint32_t rows;
  pp_gemm_algo algo;
  pp_lt_gemm *gemm;
} made_gemm;

struct pp_mlp_exec {
  const pp_gpu_weights *w;
  pp_frame_layout layout;
  cudaStream_t setup;
  int32_t *h_koff, *d_koff;                 /* the reader's per-K offsets (frames of bytes) */
  pp_cuda_a reader;                         /* at frame NULL: its kind and steps */
  pp_fused_tile fused_tile;                 /* two layers */
  bool chain_fits;                          /* more: every hidden layer on chip (mlp_chain) */
  pp_cuda_chain_layer chain[PP_MAX_LAYERS]; /* its layers, made once */
  void *wide_blob;                          /* where the model fits: mlp_wide's weights */
  pp_cuda_wide_layer wide[PP_MAX_LAYERS];   /* its layers, pointing into the blob */
  void *warp_blob;                          /* hidden layers ≤ 64 wide: mlp_warp's weights */
  pp_cuda_wide_layer warp[PP_MAX_LAYERS];   /* its layers, pointing into its blob */
  const pp_lt_table *lt;
  void *lt_handle;
  /* made_gemm: every GEMM made for the plans asked of the executor, found
   * by what a plan names (never one it does not). */
  GArray *gemms;
  /* Layer 0 on split: W in `split_pieces` pieces (TF32 or FP16) with the
   * frame's scale folded in, the bias the centring moves it by, and the
   * GEMM's alpha that undoes FP16's scaling. */
  void *w_split;
  float *b_split;
  float split_alpha;
  unsigned split_pieces;
  bool tf32;      /* cuBLAS layers on TF32 tensor cores (precision=tf32) */
  pp_dtype dtype; /* the activations' type, and X's where it is converted */
  uint32_t ldh;   /* the activations' row stride, in elements */
  /* Batches: one frame's samples; a plan's whole-frame algorithms serve
   * any whole number of frames (0: whole frames only). */
  uint32_t frame_rows;
};

/* The split path's columns a row, X's and its weights': `pieces` of W in
 * blocks along K (split_pieces.cu). */
static inline uint32_t
split_cols(const pp_mlp_exec *e, unsigned pieces)
{
  return pp_cuda_split_blocks(pieces, pp_cuda_split_exact_x(&e->reader)) *
         pp_cuda_split_kp(e->layout.k);
}

/* The bytes of a row of split's X (and of W) at `pieces`. */
static inline size_t
split_row_bytes(const pp_mlp_exec *e, unsigned pieces)
{
  return split_cols(e, pieces) * pp_dtype_size(pp_cuda_split_type(&e->reader, pieces));
}

/* Whether a GEMM that reads only its element type (cuBLAS) needs the
 * frame converted first: bytes and YUV always, floats at 16 bits. */
static inline bool
converts_x(const pp_mlp_exec *e)
{
  return e->reader.kind != PP_A_F32 || e->dtype != PP_DTYPE_F32;
}

/* Every GEMM freed; the split weights freed. */
void pp_mlp_exec_free_gemms(pp_mlp_exec *e);
void pp_mlp_exec_free_split(pp_mlp_exec *e);
/* The GEMM `plan` names for layer `layer` over `rows` samples (a whole
 * frame's, or a chunk's), NULL where none was made for it. */
const pp_lt_gemm *pp_mlp_exec_gemm_for(const pp_mlp_exec *e, const pp_cuda_plan *plan,
                                       unsigned layer, uint32_t rows);

#endif
