/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The MLP executor (mlp_exec.h): each layer's kernels for a plan. Our GEMM
 * with the bias and activation in its epilogue; cuBLASLt with its
 * bias/ReLU epilogue (our bias_act kernel after it for other activations,
 * our conversion kernel before a first layer of bytes); the split path's
 * exact TF32 pieces; the row-dot kernel for a last layer of few outputs; or
 * one kernel for the whole MLP (two layers: fused or small; more, every
 * hidden layer at most 64 wide: the chain kernel, also named fused; at 16
 * bits, hidden layers up to 512 wide: wide). The
 * cuBLASLt GEMMs themselves are made in mlp_gemms.c. */
#include <errno.h>
#include <glib.h>
#include <string.h>

#include "check.h"
#include "lt_loader.h"
#include "mlp_exec_priv.h"
#include "reader.h"

/* ---- set-up ------------------------------------------------------------- */

/* At 16 bits, where the model fits the device's shared memory: the wide
 * kernel's weights packed once. */
static int
pack_wide(pp_mlp_exec *e, char **msg)
{
  const pp_gpu_weights *w = e->w;
  uint32_t outs[PP_MAX_LAYERS];
  pp_cuda_wide_layer layers[PP_MAX_LAYERS];
  for (unsigned i = 0; i < w->n_layers; i++) {
    const pp_gpu_layer *l = &w->layers[i];
    outs[i] = l->out;
    const bool last = i + 1 == w->n_layers;
    layers[i] =
        (pp_cuda_wide_layer){ last ? (const void *) l->w : l->w16, l->b, l->in, l->out, l->act };
  }
  const size_t smem = pp_cuda_mlp_wide_smem(e->dtype, e->layout.k, w->n_layers, outs);
  int device = 0, limit = 0;
  cudaError_t err = cudaGetDevice(&device);
  if (err == cudaSuccess)
    err = cudaDeviceGetAttribute(&limit, cudaDevAttrMaxSharedMemoryPerBlockOptin, device);
  if (err != cudaSuccess)
    return pp_cuda_fail(msg, "reading the shared memory a block may have", err, __FILE__, __LINE__);
  if (smem == 0 || smem > (size_t) limit)
    return 0;
  err = cudaMalloc(&e->wide_blob, pp_cuda_wide_packed_bytes(e->dtype, layers, w->n_layers));
  if (err == cudaSuccess)
    err = pp_cuda_wide_pack(e->setup, e->dtype, layers, w->n_layers, e->wide_blob, e->wide);
  if (err == cudaSuccess)
    err = cudaStreamSynchronize(e->setup);
  if (err != cudaSuccess)
    return pp_cuda_fail(msg, "packing the wide kernel's weights", err, __FILE__, __LINE__);
  return 0;
}

int
pp_mlp_exec_new(const pp_gpu_weights *w, const pp_frame_layout *layout, pp_precision precision,
                cudaStream_t setup, pp_mlp_exec **out, char **msg)
{
  if (pp_precision_dtype(precision) != w->dtype) {
    *msg = g_strdup_printf("weights in %s for precision=%s", pp_dtype_name(w->dtype),
                           pp_precision_name(precision));
    return -EINVAL;
  }
  if (layout->k != w->layers[0].in) {
    *msg = g_strdup_printf("frames give K=%u but the model takes %u", layout->k, w->layers[0].in);
    return -EINVAL;
  }
  pp_mlp_exec *e = g_new0(pp_mlp_exec, 1);
  e->w = w;
  e->layout = *layout;
  e->setup = setup;
  e->tf32 = precision == PP_PRECISION_TF32;
  e->dtype = w->dtype;
  /* 16-byte rows for cuBLAS's 16-bit kernels. */
  e->ldh = e->dtype == PP_DTYPE_F32 ? w->ldh : (w->ldh + 7u) & ~7u;
  e->fused_tile = w->n_layers == 2 ? pp_cuda_fused_tile_for(w->layers[0].out) : PP_N_FUSED_TILES;
  uint32_t outs[PP_MAX_LAYERS];
  for (unsigned i = 0; i < w->n_layers; i++)
    outs[i] = w->layers[i].out;
  e->chain_fits = pp_cuda_mlp_chain_fits(w->n_layers, outs);
  for (unsigned i = 0; i < w->n_layers; i++) {
    const pp_gpu_layer *l = &w->layers[i];
    e->chain[i] = (pp_cuda_chain_layer){ l->w, l->wt, l->b, l->in, l->out, l->ldw, l->act };
  }
  int rc = e->dtype == PP_DTYPE_F32 ? 0 : pack_wide(e, msg);
  if (rc == 0 && layout->kind != PP_LAYOUT_TENSOR) {
    e->h_koff = g_new(int32_t, layout->k);
    pp_cuda_k_offsets(layout, e->h_koff);
    cudaError_t err = cudaMalloc((void **) &e->d_koff, layout->k * sizeof(int32_t));
    if (err == cudaSuccess)
      err = cudaMemcpyAsync(e->d_koff, e->h_koff, layout->k * sizeof(int32_t),
                            cudaMemcpyHostToDevice, setup);
    if (err == cudaSuccess)
      err = cudaStreamSynchronize(setup);
    if (err != cudaSuccess)
      rc = pp_cuda_fail(msg, "uploading the frame reader's offsets", err, __FILE__, __LINE__);
  }
  e->reader = pp_cuda_a_for_layout(layout, e->h_koff, NULL, e->d_koff);
  if (rc < 0) {
    pp_mlp_exec_free(e);
    return rc;
  }
  *out = e;
  return 0;
}

void
pp_mlp_exec_free(pp_mlp_exec *e)
{
  if (!e)
    return;
  for (unsigned i = 0; i < PP_MAX_LAYERS; i++)
    pp_mlp_exec_free_gemms(e, i);
  if (e->lt)
    e->lt->destroy(e->lt_handle);
  pp_mlp_exec_free_split(e);
  cudaFree(e->wide_blob);
  cudaFree(e->d_koff);
  g_free(e->h_koff);
  g_free(e);
}

pp_cuda_a
pp_mlp_exec_reader(const pp_mlp_exec *e, const void *frame)
{
  pp_cuda_a a = e->reader;
  a.data = frame;
  return a;
}

/* Whether a GEMM that reads only its element type (cuBLAS) needs the
 * frame converted first: bytes and YUV always, floats at 16 bits. */
static bool
converts_x(const pp_mlp_exec *e)
{
  return e->reader.kind != PP_A_F32 || e->dtype != PP_DTYPE_F32;
}

size_t
pp_mlp_exec_scratch_bytes(const pp_mlp_exec *e)
{
  if (!converts_x(e))
    return 0;
  size_t row = e->layout.k * pp_dtype_size(e->dtype);
  if (reads_bytes(e))
    row = MAX(row, 2 * pp_cuda_split_kp(e->layout.k) * sizeof(float));
  return (size_t) e->layout.n * row;
}

size_t
pp_mlp_exec_hidden_bytes(const pp_mlp_exec *e)
{
  return (size_t) e->layout.n * e->ldh * pp_dtype_size(e->dtype);
}

/* The activations of `which` from sample row0 on. */
static void *
hidden_at(const pp_mlp_exec *e, const pp_mlp_buffers *b, unsigned which, uint32_t row0)
{
  return (uint8_t *) b->d_h[which] + (size_t) row0 * e->ldh * pp_dtype_size(e->dtype);
}

bool
pp_mlp_exec_fits(const pp_mlp_exec *e, pp_cuda_path path, unsigned layer)
{
  const pp_gpu_weights *w = e->w;
  /* Only cuBLAS, the row-dot kernel and the wide kernel read 16-bit
   * activations; the wide kernel reads nothing else. */
  if (e->dtype != PP_DTYPE_F32 && path != PP_PATH_CUBLAS && path != PP_PATH_ROWDOT &&
      path != PP_PATH_WIDE)
    return false;
  switch (path) {
    case PP_PATH_WIDE:
      return e->wide_blob != NULL;
    case PP_PATH_FUSED:
      return (w->n_layers == 2 && w->layers[1].out == 1 && e->fused_tile != PP_N_FUSED_TILES) ||
             e->chain_fits;
    case PP_PATH_SMALL:
      return w->n_layers == 2 && w->layers[0].out <= PP_SMALL_MAX_D &&
             w->layers[1].out <= PP_ROWDOT_MAX_O;
    case PP_PATH_ROWDOT:
      /* It reads floats, so never the frame itself. */
      return layer > 0 && layer + 1 == w->n_layers && w->layers[layer].out <= PP_ROWDOT_MAX_O;
    case PP_PATH_SPLIT:
      return layer == 0 && reads_bytes(e);
    case PP_PATH_OWN:
    case PP_PATH_OWN_64:
    case PP_PATH_CUBLAS:
      return layer < w->n_layers;
    default:
      return false;
  }
}

int
pp_mlp_exec_prepare(pp_mlp_exec *e, const pp_cuda_plan *plan, char **msg)
{
  if (plan->whole != PP_N_PATHS) {
    if (pp_mlp_exec_fits(e, plan->whole, 0))
      return 0;
    *msg =
        g_strdup_printf("plan: kernels=%s does not fit this model", pp_cuda_path_name(plan->whole));
    return -EINVAL;
  }
  if (plan->n_layers != e->w->n_layers) {
    *msg = g_strdup_printf("plan: kernels= names %u layers for a model of %u", plan->n_layers,
                           e->w->n_layers);
    return -EINVAL;
  }
  const uint32_t chunk_rows = plan->frames == PP_FRAMES_CHUNKS ? e->layout.n / plan->chunks : 0;
  for (unsigned i = 0; i < plan->n_layers; i++) {
    const pp_layer_plan *l = &plan->layers[i];
    if (!pp_mlp_exec_fits(e, l->path, i)) {
      *msg = g_strdup_printf("plan: layer %u cannot run on %s", i, pp_cuda_path_name(l->path));
      return -EINVAL;
    }
    if (l->path != PP_PATH_CUBLAS && l->path != PP_PATH_SPLIT)
      continue;
    if (!l->has_algo || (chunk_rows && !l->has_chunk_algo)) {
      *msg = g_strdup_printf("plan: layer %u runs on %s but gives no gemm%u%s algorithm", i,
                             pp_cuda_path_name(l->path), i, l->has_algo ? "-chunk" : "");
      return -EINVAL;
    }
    int rc = pp_mlp_exec_set_gemm(e, i, l->path, l->pieces, e->layout.n, &l->algo, msg);
    if (rc == 0 && chunk_rows)
      rc = pp_mlp_exec_set_gemm(e, i, l->path, l->pieces, chunk_rows, &l->chunk_algo, msg);
    if (rc < 0)
      return rc;
  }
  return 0;
}

/* ---- running ------------------------------------------------------------- */

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
    const uint32_t row = lp->pieces * pp_cuda_split_kp(e->layout.k);
    float *dst = (float *) b->d_x + (size_t) r->row0 * row;
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
      const pp_lt_gemm *g = pp_mlp_exec_gemm_for(e, layer, r->n);
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
    CUDA_CHECK(
        pp_cuda_mlp_wide(stream, &x, r->n, e->layout.k, e->wide, e->w->n_layers, e->dtype, y));
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

/* Whether layer 0 reads the frame only through a conversion (cuBLAS on
 * bytes, or at a 16-bit precision), its GEMM then reading d_x. */
static bool
converts_first(const pp_mlp_exec *e, const pp_cuda_plan *plan)
{
  const pp_cuda_path p = plan->layers[0].path;
  return (p == PP_PATH_CUBLAS || p == PP_PATH_SPLIT) && converts_x(e);
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
