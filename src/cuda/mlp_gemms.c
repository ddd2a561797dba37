/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The executor's cuBLASLt side (mlp_exec_priv.h): cuBLASLt loaded when a
 * plan first needs it, each layer's GEMM as cuBLASLt sees it (types,
 * strides, bias, epilogue) over a whole frame's rows or a chunk's, its
 * candidate algorithms, and layer 0's weights in exact TF32 pieces for the
 * split path. */
#include <errno.h>
#include <glib.h>
#include <string.h>

#include "check.h"
#include "log.h"
#include "lt_loader.h"
#include "mlp_exec_priv.h"
#include "timing.h"

void
pp_mlp_exec_free_split(pp_mlp_exec *e)
{
  cudaFree(e->w_split);
  cudaFree(e->b_split);
  e->w_split = NULL;
  e->b_split = NULL;
  e->split_pieces = 0;
}

void
pp_mlp_exec_free_gemms(pp_mlp_exec *e, unsigned layer)
{
  layer_gemms *g = &e->gemms[layer];
  if (e->lt) {
    e->lt->free(g->whole);
    e->lt->free(g->chunk);
  }
  memset(g, 0, sizeof *g);
}

int
pp_mlp_exec_use_cublas(pp_mlp_exec *e, double *load_ms, char **msg)
{
  if (load_ms)
    *load_ms = 0;
  if (e->lt)
    return 0;
  const pp_lt_table *lt = pp_lt_get(load_ms, msg);
  if (!lt)
    return -ENOTSUP;
  void *handle = NULL;
  const int64_t t0 = pp_now_ns();
  const int status = lt->create(&handle);
  pp_log(PP_LOG_DEBUG, "cuda", "cublasLtCreate: %.1f ms", (pp_now_ns() - t0) / 1e6);
  if (status != 0)
    return pp_cuda_fail_text(msg, "cublasLtCreate", lt->status_string(status), __FILE__, __LINE__);
  e->lt = lt;
  e->lt_handle = handle;
  return 0;
}

/* Layer 0's split weights for `pieces`, made now if need be. */
static int
ensure_split(pp_mlp_exec *e, unsigned pieces, char **msg)
{
  if (e->split_pieces == pieces)
    return 0;
  pp_mlp_exec_free_split(e);
  const int64_t t0 = pp_now_ns();
  const pp_gpu_layer *l = &e->w->layers[0];
  const size_t row = pieces * pp_cuda_split_kp(e->layout.k);
  CUDA_CHECK(cudaMalloc(&e->w_split, (size_t) l->out * row * sizeof(float)));
  CUDA_CHECK(cudaMalloc((void **) &e->b_split, l->out * sizeof(float)));
  CUDA_CHECK(pp_cuda_split_weights(e->setup, l->w, l->out, l->in, pieces, e->reader.scale,
                                   e->reader.bias, l->b, e->w_split, e->b_split));
  CUDA_CHECK(cudaStreamSynchronize(e->setup));
  e->split_pieces = pieces;
  pp_log(PP_LOG_DEBUG, "cuda", "layer 0's weights split in %u pieces: %.1f ms", pieces,
         (pp_now_ns() - t0) / 1e6);
  return 0;
}

/* Layer `layer`'s GEMM as cuBLASLt sees it, over `rows` samples. */
static pp_lt_shape
gemm_shape(const pp_mlp_exec *e, unsigned layer, pp_cuda_path path, unsigned pieces, uint32_t rows)
{
  const pp_gpu_layer *l = &e->w->layers[layer];
  const bool last = layer + 1 == e->w->n_layers;
  const bool split = path == PP_PATH_SPLIT;
  const uint32_t k = split ? pieces * pp_cuda_split_kp(e->layout.k) : l->in;
  const pp_dtype c = last ? PP_DTYPE_F32 : e->dtype;
  return (pp_lt_shape){
    .m = rows,
    .k = k,
    .n = l->out,
    .ldx = split        ? k
           : layer == 0 ? e->layout.k
                        : e->ldh,
    .ldc = last ? l->out : e->ldh,
    .bias = split               ? e->b_split
            : c == PP_DTYPE_F32 ? (const void *) l->b
                                : l->b16,
    .relu = l->act.kind == PP_ACT_RELU,
    /* split's pieces are exact in TF32 (split_tf32.cu). */
    .tf32 = e->tf32 || split,
    .xw = e->dtype,
    .c = c,
  };
}

int
pp_mlp_exec_gemm_candidates(pp_mlp_exec *e, unsigned layer, pp_cuda_path path, unsigned pieces,
                            uint32_t rows, pp_gemm_algo *algos, int max, int *found, char **msg)
{
  int rc = pp_mlp_exec_use_cublas(e, NULL, msg);
  if (rc == 0 && path == PP_PATH_SPLIT)
    rc = ensure_split(e, pieces, msg);
  if (rc < 0)
    return rc;
  const pp_lt_shape shape = gemm_shape(e, layer, path, pieces, rows);
  LT_CHECK(e->lt->candidates(e->lt_handle, &shape, algos, max, found));
  return 0;
}

int
pp_mlp_exec_set_gemm(pp_mlp_exec *e, unsigned layer, pp_cuda_path path, unsigned pieces,
                     uint32_t rows, const pp_gemm_algo *algo, char **msg)
{
  int rc = pp_mlp_exec_use_cublas(e, NULL, msg);
  if (rc == 0 && path == PP_PATH_SPLIT)
    rc = ensure_split(e, pieces, msg);
  if (rc < 0)
    return rc;
  layer_gemms *g = &e->gemms[layer];
  const bool whole = rows == e->layout.n;
  const pp_lt_shape shape = gemm_shape(e, layer, path, pieces, rows);
  pp_lt_gemm *made = NULL;
  const int64_t t0 = pp_now_ns();
  LT_CHECK(e->lt->plan(e->lt_handle, &shape, algo, &made));
  pp_log(PP_LOG_DEBUG, "cuda", "layer %u's cuBLASLt algorithm for %u rows: %.1f ms", layer, rows,
         (pp_now_ns() - t0) / 1e6);
  if (g->path != path || g->pieces != pieces) {
    pp_mlp_exec_free_gemms(e, layer);
    g->path = path;
    g->pieces = pieces;
  }
  pp_lt_gemm **slot = whole ? &g->whole : &g->chunk;
  e->lt->free(*slot);
  *slot = made;
  if (!whole)
    g->chunk_rows = rows;
  return 0;
}

const pp_lt_gemm *
pp_mlp_exec_gemm_for(const pp_mlp_exec *e, unsigned layer, uint32_t rows)
{
  const layer_gemms *g = &e->gemms[layer];
  if (rows == e->layout.n)
    return g->whole;
  return rows == g->chunk_rows ? g->chunk : NULL;
}
