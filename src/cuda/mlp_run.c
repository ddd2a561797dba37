/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The MLP executor (mlp_exec.h), running: a plan's kernels enqueued for a
 * frame's rows, whole or in chunks, layer by layer or as one kernel, and a
 * frame read in place in three parts (mlp_exec.c sets it up). */
#include <errno.h>
#include <glib.h>

#include "check.h"
#include "lt_loader.h"
#include "mlp_exec_state.h"

/* The activations of `which` from sample row0 on. */
static void *
hidden_at(const pp_mlp_exec *e, const pp_mlp_buffers *b, unsigned which, uint32_t row0)
{
  return (uint8_t *) b->d_h[which] + (size_t) row0 * e->ldh * pp_dtype_size(e->dtype);
}

/* The frame from sample row0 on: chunks start at a whole row of samples,
 * so sample row0's origin is that row's first byte. */
static pp_cuda_a
frame_from(const pp_mlp_buffers *b, const pp_mlp_rows *r)
{
  pp_cuda_a x = b->x;
  if (r->frame)
    x.data = r->frame;
  if (x.kind == PP_A_F32)
    x.data = (const float *) x.data + (size_t) r->row0 * x.ld;
  else if (r->row0)
    x.data = (const uint8_t *) x.data + (size_t) (r->row0 / x.per_row) * x.row_step;
  return x;
}

static float *
results_at(const pp_mlp_exec *e, const pp_mlp_buffers *b, const pp_mlp_rows *r)
{
  return (r->out ? r->out : b->d_out) + (size_t) r->row0 * e->w->o;
}

/* Where a cuBLASLt layer reads its input: the previous layer's
 * activations, or the frame's, converted first when it is bytes or of
 * another type (to the precision's type for cublas, to TF32 pieces for
 * split) unless `converted`. */
static int
gemm_input(const pp_mlp_exec *e, const pp_mlp_buffers *b, const pp_mlp_rows *r, unsigned layer,
           const pp_layer_plan *lp, bool converted, cudaStream_t stream, const void **x, char **msg)
{
  if (layer > 0) {
    *x = hidden_at(e, b, (layer - 1) % 2, r->row0);
    return 0;
  }
  const pp_cuda_a frame = frame_from(b, r);
  *x = frame.data;
  if (lp->path == PP_PATH_SPLIT) {
    void *dst = (uint8_t *) b->d_x + (size_t) r->row0 * split_row_bytes(e, lp->pieces);
    if (!converted)
      CUDA_CHECK(pp_cuda_split_convert(stream, &frame, r->n, e->layout.k, lp->pieces, dst));
    *x = dst;
  } else if (converts_x(e)) {
    void *dst = (uint8_t *) b->d_x + (size_t) r->row0 * e->layout.k * pp_dtype_size(e->dtype);
    if (!converted)
      CUDA_CHECK(pp_cuda_convert(stream, &frame, r->n, e->layout.k, dst, e->layout.k, e->dtype));
    *x = dst;
  }
  return 0;
}

static int
run_layer(const pp_mlp_exec *e, const pp_cuda_plan *plan, const pp_mlp_buffers *b,
          const pp_mlp_rows *r, unsigned layer, bool converted, cudaStream_t stream, char **msg)
{
  const pp_gpu_layer *l = &e->w->layers[layer];
  const pp_layer_plan *lp = &plan->layers[layer];
  const bool last = layer + 1 == e->w->n_layers;
  const uint32_t ldc = last ? l->out : e->ldh;
  void *out = last ? (void *) results_at(e, b, r) : hidden_at(e, b, layer % 2, r->row0);
  switch (lp->path) {
    case PP_PATH_ROWDOT:
      CUDA_CHECK(pp_cuda_rowdot(stream, hidden_at(e, b, (layer - 1) % 2, r->row0), e->dtype, r->n,
                                l->in, e->ldh, l->w, l->b, l->out, l->act, out));
      return 0;
    case PP_PATH_OWN:
    case PP_PATH_OWN_64: {
      pp_cuda_a x = layer == 0 ? frame_from(b, r)
                               : (pp_cuda_a){ .kind = PP_A_F32,
                                              .data = hidden_at(e, b, (layer - 1) % 2, r->row0),
                                              .ld = e->ldh };
      const pp_gemm_tile tile = lp->path == PP_PATH_OWN ? PP_TILE_128x128 : PP_TILE_64x64;
      CUDA_CHECK(pp_cuda_gemm(stream, &x, r->n, l->in, l->wt, l->ldw, l->b, l->out, l->act, out,
                              ldc, tile));
      return 0;
    }
    case PP_PATH_CUBLAS:
    case PP_PATH_SPLIT: {
      const void *x = NULL;
      const int rc = gemm_input(e, b, r, layer, lp, converted, stream, &x, msg);
      if (rc < 0)
        return rc;
      const pp_lt_gemm *g = pp_mlp_exec_gemm_for(e, plan, layer, r->n);
      if (!g || !e->lt) {
        *msg = g_strdup_printf("no cuBLASLt GEMM planned for layer %u on %u rows", layer, r->n);
        return -EINVAL;
      }
      const void *w = lp->path == PP_PATH_SPLIT  ? e->w_split
                      : e->dtype == PP_DTYPE_F32 ? (const void *) l->w
                                                 : l->w16;
      LT_CHECK(e->lt->run(g, stream, x, w, out, b->workspace));
      /* cuBLASLt's GELU epilogue is not PyTorch's exact GELU: only ReLU
       * goes into the epilogue, the rest follow in our kernel. */
      if (l->act.kind != PP_ACT_RELU && l->act.kind != PP_ACT_IDENTITY)
        CUDA_CHECK(pp_cuda_bias_act(stream, out, last ? PP_DTYPE_F32 : e->dtype, r->n, l->out, ldc,
                                    NULL, l->act));
      return 0;
    }
    default:
      *msg = g_strdup_printf("layer %u has no kernels (%s)", layer, pp_cuda_path_name(lp->path));
      return -EINVAL;
  }
}

static int
run_whole(const pp_mlp_exec *e, const pp_cuda_plan *plan, const pp_mlp_buffers *b,
          const pp_mlp_rows *r, cudaStream_t stream, char **msg)
{
  const pp_gpu_layer *l0 = &e->w->layers[0], *l1 = &e->w->layers[1];
  const pp_cuda_a x = frame_from(b, r);
  float *y = results_at(e, b, r);
  if (plan->whole == PP_PATH_WIDE) {
    CUDA_CHECK(pp_cuda_mlp_wide(stream, &x, r->n, e->layout.k, e->wide, e->w->n_layers, e->dtype,
                                e->tf32, y));
    return 0;
  }
  if (plan->whole == PP_PATH_WARP) {
    CUDA_CHECK(pp_cuda_mlp_warp(stream, &x, r->n, e->layout.k, e->warp, e->w->n_layers, e->dtype,
                                e->tf32, y));
    return 0;
  }
  if (plan->whole == PP_PATH_FUSED && e->w->n_layers > 2) {
    CUDA_CHECK(
        pp_cuda_mlp_chain(stream, &x, r->n, e->layout.k, e->chain, e->w->n_layers, e->tf32, y));
    return 0;
  }
  if (plan->whole == PP_PATH_FUSED) {
    CUDA_CHECK(pp_cuda_mlp_fused(stream, &x, r->n, e->layout.k, l0->wt, l0->ldw, l0->b, l0->out,
                                 l0->act, l1->w, l1->b, l1->act, y, e->fused_tile));
    return 0;
  }
  const pp_cuda_done_signal done = { b->d_done_count, b->d_done_flag, r->signal };
  CUDA_CHECK(pp_cuda_mlp_small(stream, &x, r->n, e->layout.k, l0->wt, l0->ldw, l0->b, l0->out,
                               l0->act, l1->w, l1->b, l1->out, l1->act, y, plan->small_rows,
                               r->signal ? &done : NULL));
  return 0;
}

int
pp_mlp_exec_run(const pp_mlp_exec *e, const pp_cuda_plan *plan, const pp_mlp_buffers *b,
                const pp_mlp_rows *rows, cudaStream_t stream, char **msg)
{
  if (plan->whole != PP_N_PATHS)
    return run_whole(e, plan, b, rows, stream, msg);
  for (unsigned i = 0; i < e->w->n_layers; i++) {
    const int rc = run_layer(e, plan, b, rows, i, false, stream, msg);
    if (rc < 0)
      return rc;
  }
  return 0;
}

int
pp_mlp_exec_run_layer(const pp_mlp_exec *e, const pp_cuda_plan *plan, const pp_mlp_buffers *b,
                      unsigned layer, uint32_t rows, cudaStream_t stream, char **msg)
{
  const pp_mlp_rows first = { 0, rows, NULL, NULL, 0 };
  return run_layer(e, plan, b, &first, layer, false, stream, msg);
}

/* ---- a frame read in place, layer by layer -------------------------------- */

/* Whether layer 0 reads the frame only through a conversion (split;
 * cuBLAS on bytes, or at a 16-bit precision), its GEMM then reading d_x. */
static bool
converts_first(const pp_mlp_exec *e, const pp_cuda_plan *plan)
{
  const pp_cuda_path p = plan->layers[0].path;
  return p == PP_PATH_SPLIT || (p == PP_PATH_CUBLAS && converts_x(e));
}

bool
pp_mlp_exec_has_between(const pp_mlp_exec *e, const pp_cuda_plan *plan)
{
  if (plan->whole != PP_N_PATHS || e->w->n_layers < 2)
    return false;
  return converts_first(e, plan) || e->w->n_layers > 2;
}

/* Layer 0's GEMM on the converted frame (when it converts first), then
 * every layer but the first and the last. */
int
pp_mlp_exec_run_between(const pp_mlp_exec *e, const pp_cuda_plan *plan, const pp_mlp_buffers *b,
                        cudaStream_t stream, char **msg)
{
  const pp_mlp_rows whole = { 0, e->layout.n, NULL, NULL, 0 };
  for (unsigned i = converts_first(e, plan) ? 0 : 1; i + 1 < e->w->n_layers; i++) {
    const int rc = run_layer(e, plan, b, &whole, i, true, stream, msg);
    if (rc < 0)
      return rc;
  }
  return 0;
}

/* Each direct cuBLASLt call costs the submitting thread tens of µs, so the
 * middle part runs from the slot's graph. */
int
pp_mlp_exec_run_in_place(const pp_mlp_exec *e, const pp_cuda_plan *plan, const pp_mlp_buffers *b,
                         const pp_mlp_rows *rows, cudaGraphExec_t between, cudaStream_t stream,
                         char **msg)
{
  if (!pp_mlp_exec_has_between(e, plan))
    return pp_mlp_exec_run(e, plan, b, rows, stream, msg);
  const unsigned last = e->w->n_layers - 1;
  int rc;
  if (converts_first(e, plan)) {
    const void *x = NULL;
    rc = gemm_input(e, b, rows, 0, &plan->layers[0], false, stream, &x, msg);
  } else {
    rc = run_layer(e, plan, b, rows, 0, false, stream, msg);
  }
  if (rc == 0 && between) {
    const cudaError_t err = cudaGraphLaunch(between, stream);
    if (err != cudaSuccess)
      rc = pp_cuda_fail(msg, "cudaGraphLaunch", err, __FILE__, __LINE__);
  } else if (rc == 0) {
    rc = pp_mlp_exec_run_between(e, plan, b, stream, msg);
  }
  if (rc < 0)
    return rc;
  return run_layer(e, plan, b, rows, last, false, stream, msg);
}

bool
pp_mlp_exec_can_signal(const pp_cuda_plan *plan)
{
  return plan->whole == PP_PATH_SMALL;
}
