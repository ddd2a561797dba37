/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The executor's state, shared by its three files: mlp_exec.c (set-up),
 * mlp_run.c (running) and mlp_gemms.c (its cuBLASLt GEMMs and split
 * weights). */
#ifndef PP_CUDA_MLP_EXEC_PRIV_H
#define PP_CUDA_MLP_EXEC_PRIV_H

#include "lt_table.h"
#include "mlp_exec.h"

/* A layer's cuBLASLt GEMMs: over a whole frame, and over a chunk's rows. */
typedef struct {
  pp_lt_gemm *whole, *chunk;
  pp_cuda_path path; /* what they were planned for: cublas or split */
  unsigned pieces;
  uint32_t chunk_rows;
} layer_gemms;

struct pp_mlp_exec {
  const pp_gpu_weights *w;
  pp_frame_layout layout;
  cudaStream_t setup;
  int32_t *h_koff, *d_koff;                 /* the reader's per-K offsets (frames of bytes) */
  pp_cuda_a reader;                         /* at frame NULL: its kind and steps */
  pp_fused_tile fused_tile;                 /* two layers */
  bool chain_fits;                          /* more: every hidden layer on chip (mlp_chain) */
  pp_cuda_chain_layer chain[PP_MAX_LAYERS]; /* its layers, made once */
  void *wide_blob;                        /* at 16 bits, where the model fits: mlp_wide's weights */
  pp_cuda_wide_layer wide[PP_MAX_LAYERS]; /* its layers, pointing into the blob */
  const pp_lt_table *lt;
  void *lt_handle;
  layer_gemms gemms[PP_MAX_LAYERS];
  /* Layer 0 on split: W in `split_pieces` TF32 pieces with the frame's
   * scale folded in, and the bias the centring moves it by. */
  void *w_split;
  float *b_split;
  unsigned split_pieces;
  bool tf32;      /* cuBLAS layers on TF32 tensor cores (precision=tf32) */
  pp_dtype dtype; /* the activations' type, and X's where it is converted */
  uint32_t ldh;   /* the activations' row stride, in elements */
};

static inline bool
reads_bytes(const pp_mlp_exec *e)
{
  return e->reader.kind == PP_A_U8_VEC4 || e->reader.kind == PP_A_U8_GATHER;
}

/* Whether a GEMM that reads only its element type (cuBLAS) needs the
 * frame converted first: bytes and YUV always, floats at 16 bits. */
static inline bool
converts_x(const pp_mlp_exec *e)
{
  return e->reader.kind != PP_A_F32 || e->dtype != PP_DTYPE_F32;
}

/* Layer `layer`'s GEMMs freed; the split weights freed. */
void pp_mlp_exec_free_gemms(pp_mlp_exec *e, unsigned layer);
void pp_mlp_exec_free_split(pp_mlp_exec *e);
/* Layer `layer`'s GEMM over `rows` samples (a whole frame's or a chunk's),
 * NULL when none is planned for them. */
const pp_lt_gemm *pp_mlp_exec_gemm_for(const pp_mlp_exec *e, unsigned layer, uint32_t rows);

#endif
