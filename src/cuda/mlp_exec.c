/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The MLP executor (mlp_exec.h), its set-up: the frame reader's offsets,
 * the wide kernel's packed weights, which kernels fit, and a plan's GEMMs
 * made ready (mlp_run.c runs it). The kernels a layer may run on: our GEMM
 * with the bias and activation in its epilogue; cuBLASLt with its bias/ReLU
 * epilogue (our bias_act kernel after it for other activations, our
 * conversion kernel before a first layer of bytes); the split path's exact
 * TF32 pieces for a first layer; the row-dot kernel for a last layer of few outputs; or one
 * kernel for the whole MLP (two layers: fused or small; more, every hidden
 * layer at most 64 wide: the chain kernel, also named fused, and warp;
 * hidden layers up to 512 wide: wide). The cuBLASLt GEMMs themselves are
 * made in mlp_gemms.c. */
#include <errno.h>
#include <glib.h>

#include "check.h"
#include "log.h"
#include "mlp_exec_state.h"
#include "reader.h"
#include "timing.h"

/* ---- set-up ------------------------------------------------------------- */

/* The layers as the kernels that keep the model on chip read them: the
 * hidden layers' weights in the activations' type, the last one's in
 * floats. */
static void
on_chip_layers(const pp_mlp_exec *e, pp_cuda_wide_layer *layers, uint32_t *outs)
{
  const pp_gpu_weights *w = e->w;
  for (unsigned i = 0; i < w->n_layers; i++) {
    const pp_gpu_layer *l = &w->layers[i];
    outs[i] = l->out;
    const bool last = i + 1 == w->n_layers;
    const void *wi = last || e->dtype == PP_DTYPE_F32 ? (const void *) l->w : l->w16;
    layers[i] = (pp_cuda_wide_layer){ wi, l->b, l->in, l->out, l->act };
  }
}

typedef size_t (*smem_fn)(pp_dtype, uint32_t, unsigned, const uint32_t *);
typedef size_t (*bytes_fn)(pp_dtype, bool, const pp_cuda_wide_layer *, unsigned);
typedef cudaError_t (*pack_fn)(cudaStream_t, pp_dtype, bool, const pp_cuda_wide_layer *, unsigned,
                               void *, pp_cuda_wide_layer *);

/* Where the model fits a block's shared memory on this device (`smem`),
 * its weights packed once (`bytes`, `pack`) into *blob, `packed` the
 * layers pointing there; else *blob stays NULL. */
static int
pack_on_chip(pp_mlp_exec *e, smem_fn smem, bytes_fn bytes, pack_fn pack, void **blob,
             pp_cuda_wide_layer *packed, const char *what, char **msg)
{
  const pp_gpu_weights *w = e->w;
  uint32_t outs[PP_MAX_LAYERS];
  pp_cuda_wide_layer layers[PP_MAX_LAYERS];
  on_chip_layers(e, layers, outs);
  const size_t need = smem(e->dtype, e->layout.k, w->n_layers, outs);
  int device = 0, limit = 0;
  cudaError_t err = cudaGetDevice(&device);
  if (err == cudaSuccess)
    err = cudaDeviceGetAttribute(&limit, cudaDevAttrMaxSharedMemoryPerBlockOptin, device);
  if (err != cudaSuccess)
    return pp_cuda_fail(msg, "reading the shared memory a block may have", err, __FILE__, __LINE__);
  if (need == 0 || need > (size_t) limit)
    return 0;
  const int64_t t0 = pp_now_ns();
  err = cudaMalloc(blob, bytes(e->dtype, e->tf32, layers, w->n_layers));
  if (err == cudaSuccess)
    err = pack(e->setup, e->dtype, e->tf32, layers, w->n_layers, *blob, packed);
  if (err == cudaSuccess)
    err = cudaStreamSynchronize(e->setup);
  if (err != cudaSuccess)
    return pp_cuda_fail(msg, what, err, __FILE__, __LINE__);
  pp_log(PP_LOG_DEBUG, "cuda", "%s: %.1f ms", what, pp_ms_since(t0));
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
  int rc = pack_on_chip(e, pp_cuda_mlp_wide_smem, pp_cuda_wide_packed_bytes, pp_cuda_wide_pack,
                        &e->wide_blob, e->wide, "packing the wide kernel's weights", msg);
  if (rc == 0)
    rc = pack_on_chip(e, pp_cuda_mlp_warp_smem, pp_cuda_warp_packed_bytes, pp_cuda_warp_pack,
                      &e->warp_blob, e->warp, "packing the warp kernel's weights", msg);
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
  pp_mlp_exec_free_gemms(e);
  if (e->gemms)
    g_array_free(e->gemms, TRUE);
  if (e->lt)
    e->lt->destroy(e->lt_handle);
  pp_mlp_exec_free_split(e);
  cudaFree(e->wide_blob);
  cudaFree(e->warp_blob);
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

size_t
pp_mlp_exec_scratch_bytes(const pp_mlp_exec *e, const pp_cuda_plan *plan)
{
  const pp_cuda_path first = !plan                       ? PP_N_PATHS
                             : plan->whole != PP_N_PATHS ? plan->whole
                                                         : plan->layers[0].path;
  size_t row = 0;
  if (converts_x(e) && (!plan || first == PP_PATH_CUBLAS))
    row = e->layout.k * pp_dtype_size(e->dtype);
  /* Split converts every kind of frame: room for the pieces a plan may
   * give it (two in FP16 may take less than one in TF32). */
  if (e->dtype == PP_DTYPE_F32 && plan && first == PP_PATH_SPLIT)
    row = MAX(row, split_row_bytes(e, plan->layers[0].pieces));
  else if (e->dtype == PP_DTYPE_F32 && !plan)
    row = MAX(row, MAX(split_row_bytes(e, 1), split_row_bytes(e, 2)));
  return (size_t) e->layout.n * row;
}

size_t
pp_mlp_exec_hidden_bytes(const pp_mlp_exec *e)
{
  return (size_t) e->layout.n * e->ldh * pp_dtype_size(e->dtype);
}

bool
pp_mlp_exec_fits(const pp_mlp_exec *e, pp_cuda_path path, unsigned layer)
{
  const pp_gpu_weights *w = e->w;
  /* Only cuBLAS, the row-dot kernel and the wide and warp kernels read
   * 16-bit activations. */
  if (e->dtype != PP_DTYPE_F32 && path != PP_PATH_CUBLAS && path != PP_PATH_ROWDOT &&
      path != PP_PATH_WIDE && path != PP_PATH_WARP)
    return false;
  switch (path) {
    case PP_PATH_WIDE:
      return e->wide_blob != NULL;
    case PP_PATH_WARP:
      return e->warp_blob != NULL;
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
      return layer == 0;
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
    if (!pp_cuda_path_tunes_gemm(l->path))
      continue;
    if (!l->has_algo || (chunk_rows && !l->has_chunk_algo)) {
      *msg = g_strdup_printf("plan: layer %u runs on %s but gives no gemm%u%s algorithm", i,
                             pp_cuda_path_name(l->path), i, l->has_algo ? "-chunk" : "");
      return -EINVAL;
    }
    int rc = pp_mlp_exec_make_gemm(e, i, l->path, l->pieces, e->layout.n, &l->algo, msg);
    if (rc == 0 && chunk_rows)
      rc = pp_mlp_exec_make_gemm(e, i, l->path, l->pieces, chunk_rows, &l->chunk_algo, msg);
    if (rc < 0)
      return rc;
  }
  return 0;
}
