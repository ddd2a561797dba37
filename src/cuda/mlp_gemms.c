/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The executor's cuBLASLt side (mlp_exec_state.h): cuBLASLt loaded when a
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
#include "mlp_exec_state.h"
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
pp_mlp_exec_free_gemms(pp_mlp_exec *e)
{
  for (guint i = 0; e->gemms && i < e->gemms->len; i++)
    e->lt->free(g_array_index(e->gemms, made_gemm, i).gemm);
  if (e->gemms)
    g_array_set_size(e->gemms, 0);
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
  pp_log(PP_LOG_DEBUG, "cuda", "cublasLtCreate: %.1f ms", pp_ms_since(t0));
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
  CUDA_CHECK(cudaMalloc(&e->w_split, (size_t) l->out * split_row_bytes(e, pieces)));
  CUDA_CHECK(cudaMalloc((void **) &e->b_split, l->out * sizeof(float)));
  CUDA_CHECK(pp_cuda_split_weights(e->setup, l->w, l->out, l->in, pieces, &e->reader, l->b,
                                   e->w_split, e->b_split, &e->split_alpha));
  CUDA_CHECK(cudaStreamSynchronize(e->setup));
  e->split_pieces = pieces;
  pp_log(PP_LOG_DEBUG, "cuda", "layer 0's weights split in %u pieces: %.1f ms", pieces,
         pp_ms_since(t0));
  return 0;
}

/* Layer `layer`'s GEMM as cuBLASLt sees it, over `rows` samples. */
static pp_lt_shape
gemm_shape(const pp_mlp_exec *e, unsigned layer, pp_cuda_path path, unsigned pieces, uint32_t rows)
{
  const pp_gpu_layer *l = &e->w->layers[layer];
  const bool last = layer + 1 == e->w->n_layers;
  const bool split = path == PP_PATH_SPLIT;
  const uint32_t k = split ? split_cols(e, pieces) : l->in;
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
    /* split's pieces are exact in TF32 or FP16 (split_pieces.cu). */
    .tf32 = e->tf32 || split,
    .xw = split ? pp_cuda_split_type(&e->reader, pieces) : e->dtype,
    .c = c,
    .alpha = split ? e->split_alpha : 1.0f,
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

static bool
same_algo(const pp_gemm_algo *a, const pp_gemm_algo *b)
{
  return a->id == b->id && a->tile == b->tile && a->stages == b->stages && a->splitk == b->splitk &&
         a->reduction == b->reduction && a->swizzle == b->swizzle && a->custom == b->custom &&
         a->inner == b->inner && a->cluster == b->cluster;
}

static const made_gemm *
find_gemm(const pp_mlp_exec *e, unsigned layer, pp_cuda_path path, unsigned pieces, uint32_t rows,
          const pp_gemm_algo *algo)
{
  for (guint i = 0; e->gemms && i < e->gemms->len; i++) {
    const made_gemm *m = &g_array_index(e->gemms, made_gemm, i);
    if (m->layer == layer && m->path == path && m->pieces == pieces && m->rows == rows &&
        same_algo(&m->algo, algo))
      return m;
  }
  return NULL;
}

int
pp_mlp_exec_make_gemm(pp_mlp_exec *e, unsigned layer, pp_cuda_path path, unsigned pieces,
                      uint32_t rows, const pp_gemm_algo *algo, char **msg)
{
  int rc = pp_mlp_exec_use_cublas(e, NULL, msg);
  if (rc == 0 && path == PP_PATH_SPLIT)
    rc = ensure_split(e, pieces, msg);
  if (rc < 0 || find_gemm(e, layer, path, pieces, rows, algo))
    return rc;
  const pp_lt_shape shape = gemm_shape(e, layer, path, pieces, rows);
  made_gemm made = { layer, path, pieces, rows, *algo, NULL };
  const int64_t t0 = pp_now_ns();
  LT_CHECK(e->lt->plan(e->lt_handle, &shape, algo, &made.gemm));
  pp_log(PP_LOG_DEBUG, "cuda", "layer %u's cuBLASLt algorithm for %u rows: %.1f ms", layer, rows,
         pp_ms_since(t0));
  if (!e->gemms)
    e->gemms = g_array_new(FALSE, FALSE, sizeof(made_gemm));
  g_array_append_val(e->gemms, made);
  return 0;
}

/* The algorithm `plan` gives layer `layer` over `rows` samples, NULL for
 * none. */
static const pp_gemm_algo *
planned_algo(const pp_mlp_exec *e, const pp_cuda_plan *plan, unsigned layer, uint32_t rows)
{
  const pp_layer_plan *l = &plan->layers[layer];
  if (plan->whole != PP_N_PATHS || layer >= plan->n_layers || !pp_cuda_path_tunes_gemm(l->path))
    return NULL;
  const bool frames = e->frame_rows && rows % e->frame_rows == 0 && rows < e->layout.n;
  if (rows == e->layout.n || frames)
    return l->has_algo ? &l->algo : NULL;
  const bool chunk = plan->frames == PP_FRAMES_CHUNKS && rows == e->layout.n / plan->chunks;
  return chunk && l->has_chunk_algo ? &l->chunk_algo : NULL;
}

const pp_lt_gemm *
pp_mlp_exec_gemm_for(const pp_mlp_exec *e, const pp_cuda_plan *plan, unsigned layer, uint32_t rows)
{
  const pp_gemm_algo *algo = planned_algo(e, plan, layer, rows);
  const pp_layer_plan *l = &plan->layers[layer];
  const made_gemm *m = algo ? find_gemm(e, layer, l->path, l->pieces, rows, algo) : NULL;
  return m ? m->gemm : NULL;
}

int
pp_mlp_exec_prepare_batches(pp_mlp_exec *e, const pp_cuda_plan *plan, unsigned frames, char **msg)
{
  e->frame_rows = e->layout.n / frames;
  for (unsigned i = 0; plan->whole == PP_N_PATHS && i < plan->n_layers; i++) {
    const pp_layer_plan *l = &plan->layers[i];
    if (!pp_cuda_path_tunes_gemm(l->path) || !l->has_algo)
      continue;
    for (unsigned f = 1; f < frames; f++) {
      const int rc =
          pp_mlp_exec_make_gemm(e, i, l->path, l->pieces, f * e->frame_rows, &l->algo, msg);
      if (rc < 0) {
        e->frame_rows = 0;
        return rc;
      }
    }
  }
  return 0;
}

void
pp_mlp_exec_keep_only(pp_mlp_exec *e, const pp_cuda_plan *plan)
{
  bool split = false;
  for (guint i = 0; e->gemms && i < e->gemms->len;) {
    made_gemm *m = &g_array_index(e->gemms, made_gemm, i);
    const pp_gemm_algo *algo = planned_algo(e, plan, m->layer, m->rows);
    const pp_layer_plan *l = &plan->layers[m->layer];
    if (algo && l->path == m->path && l->pieces == m->pieces && same_algo(algo, &m->algo)) {
      split = split || m->path == PP_PATH_SPLIT;
      i++;
      continue;
    }
    e->lt->free(m->gemm);
    g_array_remove_index_fast(e->gemms, i);
  }
  if (!split)
    pp_mlp_exec_free_split(e);
}
