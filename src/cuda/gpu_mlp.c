/* The MLP on the GPU, layer by layer: weights on the device, each layer's
 * kernels (our GEMM with the bias and activation in its epilogue, 128×128
 * or 64×64 tiles; cuBLASLt with its bias/ReLU epilogue; the row-dot kernel
 * for a last layer with few outputs), the intermediate activations taking
 * turns in two buffers, and the choice of kernels per layer by timing them
 * on the real shapes. A two-layer model with one output may instead run
 * whole in mlp_fused, when that is faster. */
#include <errno.h>
#include <string.h>

#include "backend_cuda_priv.h"
#include "stats.h"

#define TUNE_REPS 10

static const char *const path_names[PP_N_PATHS] = {
  [PP_PATH_FUSED] = "fused",
  [PP_PATH_OWN] = "own",
  [PP_PATH_OWN_64] = "own64",
  [PP_PATH_CUBLAS] = "cublas",
};

const char *
cuda_path_name(pp_cuda_path path)
{
  return path < PP_N_PATHS ? path_names[path] : "?";
}

/* ---- weights --------------------------------------------------------------- */

void
pp_gpu_mlp_free_weights(cuda_backend *b)
{
  for (unsigned i = 0; i < b->n_layers; i++) {
    cuda_layer *l = &b->layers[i];
    cudaFree(l->w);
    cudaFree(l->wt);
    cudaFree(l->b);
    pp_lt_gemm_destroy(l->lt);
  }
  memset(b->layers, 0, sizeof b->layers);
  b->n_layers = 0;
  b->model_id = 0;
}

/* Copies `count` floats to a new device buffer of `capacity` floats, the
 * rest zero. */
static int
upload(cuda_backend *b, float **dst, const float *src, size_t count, size_t capacity, char **msg)
{
  CUDA_CHECK(cudaMalloc((void **) dst, capacity * sizeof(float)));
  CUDA_CHECK(cudaMemsetAsync(*dst, 0, capacity * sizeof(float), b->setup_stream));
  if (src && count)
    CUDA_CHECK(
        cudaMemcpyAsync(*dst, src, count * sizeof(float), cudaMemcpyHostToDevice, b->setup_stream));
  return 0;
}

/* W [rows×cols] → Wt [cols×ld], zero-padded past `rows`. */
static float *
transpose_padded(const float *w, uint32_t rows, uint32_t cols, uint32_t ld)
{
  float *t = g_new0(float, (size_t) cols *ld);
  for (uint32_t r = 0; r < rows; r++)
    for (uint32_t c = 0; c < cols; c++)
      t[(size_t) c * ld + r] = w[(size_t) r * cols + c];
  return t;
}

int
pp_gpu_mlp_load_weights(cuda_backend *b, const pp_model *m, char **msg)
{
  pp_gpu_mlp_free_weights(b);
  float *wts[PP_MAX_LAYERS] = { NULL };
  int rc = 0;
  b->n_layers = m->n_layers;
  for (unsigned i = 0; i < m->n_layers && rc == 0; i++) {
    const pp_layer *src = &m->layers[i];
    cuda_layer *l = &b->layers[i];
    l->in = src->in;
    l->out = src->out;
    l->ldw = pp_cuda_pad4(src->out);
    l->act = src->act;
    /* The row-dot kernel reads floats, so never the frame itself. */
    l->rowdot = i > 0 && i + 1 == m->n_layers && src->out <= PP_ROWDOT_MAX_O;
    const size_t weights = (size_t) src->out * src->in;
    wts[i] = transpose_padded(src->w, src->out, src->in, l->ldw);
    rc = upload(b, &l->w, src->w, weights, weights, msg);
    if (rc == 0)
      rc = upload(b, &l->wt, wts[i], (size_t) src->in * l->ldw, (size_t) src->in * l->ldw, msg);
    if (rc == 0 && src->b)
      rc = upload(b, &l->b, src->b, src->out, l->ldw, msg);
  }
  b->o = m->o;
  b->ldh = pp_cuda_pad4(pp_model_max_hidden(m));
  /* The host copies must outlive the asynchronous uploads. */
  const cudaError_t err = cudaStreamSynchronize(b->setup_stream);
  for (unsigned i = 0; i < PP_MAX_LAYERS; i++)
    g_free(wts[i]);
  if (rc == 0 && err != cudaSuccess)
    rc = pp_cuda_fail(msg, "uploading the weights", err, __FILE__, __LINE__);
  if (rc == 0)
    b->model_id = m->id;
  return rc;
}

/* ---- running ---------------------------------------------------------------- */

/* Where layer i reads its input as floats (cuBLAS), converting the frame
 * first when it is bytes. */
static int
float_input(cuda_backend *b, cuda_slot *s, unsigned i, cudaStream_t stream, const float **x,
            char **msg)
{
  if (i > 0) {
    *x = s->d_h[(i - 1) % 2];
    return 0;
  }
  *x = s->d_in;
  if (s->x.kind != PP_A_F32) {
    CUDA_CHECK(pp_cuda_convert(stream, &s->x, b->layout.n, b->layout.k, s->d_x, b->layout.k));
    *x = s->d_x;
  }
  return 0;
}

static int
run_layer(cuda_backend *b, cuda_slot *s, unsigned i, pp_cuda_path path, cudaStream_t stream,
          char **msg)
{
  const cuda_layer *l = &b->layers[i];
  const uint32_t n = b->layout.n;
  const bool last = i + 1 == b->n_layers;
  float *out = last ? s->d_out : s->d_h[i % 2];
  const uint32_t ldc = last ? l->out : b->ldh;
  if (l->rowdot) {
    CUDA_CHECK(pp_cuda_rowdot(stream, s->d_h[(i - 1) % 2], n, l->in, b->ldh, l->w, l->b, l->out,
                              l->act, out));
    return 0;
  }
  switch (path) {
    case PP_PATH_OWN:
    case PP_PATH_OWN_64: {
      const pp_cuda_a *x = i == 0 ? &s->x : &s->h[(i - 1) % 2];
      const pp_gemm_tile tile = path == PP_PATH_OWN ? PP_TILE_128x128 : PP_TILE_64x64;
      CUDA_CHECK(
          pp_cuda_gemm(stream, x, n, l->in, l->wt, l->ldw, l->b, l->out, l->act, out, ldc, tile));
      return 0;
    }
    case PP_PATH_CUBLAS: {
      const float *x = NULL;
      const int rc = float_input(b, s, i, stream, &x, msg);
      if (rc < 0)
        return rc;
      if (!l->lt) {
        *msg = g_strdup_printf("cuBLASLt has no plan for layer %u", i + 1);
        return -EINVAL;
      }
      BLAS_CHECK(pp_lt_gemm_run(l->lt, stream, x, l->w, out, s->workspace));
      return 0;
    }
    default:
      *msg = g_strdup_printf("no kernels chosen for layer %u", i + 1);
      return -EINVAL;
  }
}

static int
run_fused(cuda_backend *b, cuda_slot *s, cudaStream_t stream, char **msg)
{
  const cuda_layer *l0 = &b->layers[0], *l1 = &b->layers[1];
  CUDA_CHECK(pp_cuda_mlp_fused(stream, &s->x, b->layout.n, b->layout.k, l0->wt, l0->ldw, l0->b,
                               l0->out, l0->act, l1->w, l1->b, l1->act, s->d_out, b->fused_tile));
  return 0;
}

int
pp_gpu_mlp_run(cuda_backend *b, cuda_slot *s, pp_cuda_path force, cudaStream_t stream, char **msg)
{
  if (force == PP_PATH_FUSED || (force == PP_N_PATHS && b->fused))
    return run_fused(b, s, stream, msg);
  for (unsigned i = 0; i < b->n_layers; i++) {
    const int rc = run_layer(b, s, i, force == PP_N_PATHS ? b->layers[i].path : force, stream, msg);
    if (rc < 0)
      return rc;
  }
  return 0;
}

/* ---- choosing ---------------------------------------------------------------- */

static bool
fused_fits(const cuda_backend *b)
{
  return b->n_layers == 2 && b->layers[1].out == 1 && b->fused_tile != PP_N_FUSED_TILES;
}

static bool
path_fits(const cuda_backend *b, pp_cuda_path path)
{
  if (path == PP_PATH_FUSED)
    return fused_fits(b);
  if (path == PP_PATH_CUBLAS)
    for (unsigned i = 0; i < b->n_layers; i++)
      if (!b->layers[i].rowdot && !b->layers[i].lt)
        return false;
  return path < PP_N_PATHS;
}

/* Median time, in µs, on slot 0: layer `layer` alone on `path`, or the
 * whole MLP (layer < 0, `path` as pp_gpu_mlp_run's force). */
static int
time_run(cuda_backend *b, int layer, pp_cuda_path path, unsigned reps, double *us, char **msg)
{
  cuda_slot *s = &b->slots[0];
  g_autofree double *samples = g_new(double, reps);
  int rc = 0;
#define RUN()                                                                                      \
  (layer < 0 ? pp_gpu_mlp_run(b, s, path, s->stream, msg)                                          \
             : run_layer(b, s, (unsigned) layer, path, s->stream, msg))
  for (unsigned i = 0; i < 3 && rc == 0; i++)
    rc = RUN();
  for (unsigned i = 0; i < reps && rc == 0; i++) {
    cudaError_t err = pp_cuda_spin(s->stream, TIMING_LEAD_US);
    if (err == cudaSuccess)
      err = cudaEventRecord(s->ev_h2d, s->stream);
    if (err != cudaSuccess)
      rc = pp_cuda_fail(msg, "cudaEventRecord", err, __FILE__, __LINE__);
    if (rc == 0)
      rc = RUN();
    float ms = 0;
    if (rc == 0 && cudaEventRecord(s->ev_mlp, s->stream) == cudaSuccess &&
        cudaEventSynchronize(s->ev_mlp) == cudaSuccess)
      cudaEventElapsedTime(&ms, s->ev_h2d, s->ev_mlp);
    samples[i] = ms * 1000.0;
  }
#undef RUN
  if (rc == 0)
    *us = pp_median(samples, reps);
  return rc;
}

void
pp_gpu_mlp_unplan(cuda_backend *b)
{
  for (unsigned i = 0; i < b->n_layers; i++) {
    pp_lt_gemm_destroy(b->layers[i].lt);
    b->layers[i].lt = NULL;
  }
}

/* cuBLASLt for every layer it can take, on slot 0's buffers. All or
 * nothing: a layer it cannot plan leaves cuBLAS out of the candidates. */
static int
plan_cublas(cuda_backend *b, char **msg)
{
  cuda_slot *s = &b->slots[0];
  const pp_frame_layout *fl = &b->layout;
  const bool tf32 = b->precision == PP_PRECISION_TF32;
  for (unsigned i = 0; i < b->n_layers; i++) {
    cuda_layer *l = &b->layers[i];
    if (l->rowdot)
      continue;
    const bool last = i + 1 == b->n_layers;
    const float *x = NULL;
    int rc = float_input(b, s, i, s->stream, &x, msg);
    if (rc < 0)
      return rc;
    BLAS_CHECK(pp_lt_gemm_plan(b->lt, fl->n, l->in, l->out, i == 0 ? fl->k : b->ldh,
                               last ? l->out : b->ldh, l->b, l->act, tf32, LT_WORKSPACE_BYTES,
                               s->stream, x, l->w, last ? s->d_out : s->d_h[i % 2], s->workspace,
                               &l->lt));
  }
  return 0;
}

/* PINGPONG_CUDA_PATH: one path for every layer ("own"), "fused", or one
 * per layer joined by '+' as pp_gpu_mlp_describe writes them. */
static int
force_paths(cuda_backend *b, const char *forced, char **msg)
{
  g_auto(GStrv) names = g_strsplit(forced, "+", -1);
  const unsigned n = g_strv_length(names);
  if (n != 1 && n != b->n_layers) {
    *msg = g_strdup_printf("PINGPONG_CUDA_PATH=%s names %u paths for %u layers", forced, n,
                           b->n_layers);
    return -EINVAL;
  }
  for (unsigned i = 0; i < b->n_layers; i++) {
    const char *name = names[n == 1 ? 0 : i];
    int p = 0;
    while (p < PP_N_PATHS && strcmp(name, path_names[p]) != 0)
      p++;
    if (strcmp(name, "rowdot") == 0 && b->layers[i].rowdot)
      continue;
    if (p == PP_N_PATHS) {
      *msg = g_strdup_printf("PINGPONG_CUDA_PATH=%s: '%s' is not one of fused, own, own64, "
                             "cublas, rowdot",
                             forced, name);
      return -EINVAL;
    }
    if (!path_fits(b, p)) {
      *msg = g_strdup_printf("PINGPONG_CUDA_PATH=%s does not fit these shapes", forced);
      return -EINVAL;
    }
    b->fused = p == PP_PATH_FUSED;
    b->layers[i].path = p;
  }
  return 0;
}

int
pp_gpu_mlp_plan(cuda_backend *b, char **msg)
{
  b->fused = false;
  b->fused_tile = b->n_layers == 2 ? pp_cuda_fused_tile_for(b->layers[0].out) : PP_N_FUSED_TILES;
  for (unsigned i = 0; i < b->n_layers; i++)
    b->layers[i].path = PP_PATH_OWN;
  /* Every buffer holds real values before anything is timed. */
  int rc = pp_gpu_mlp_run(b, &b->slots[0], PP_PATH_OWN, b->slots[0].stream, msg);
  if (rc < 0)
    return rc;
  char *lt_error = NULL;
  if (plan_cublas(b, &lt_error) < 0)
    pp_gpu_mlp_unplan(b);
  g_free(lt_error);

  const char *forced = g_getenv("PINGPONG_CUDA_PATH");
  if (forced && *forced)
    return force_paths(b, forced, msg);

  /* Each layer on its fastest kernels, then the fused kernel if it beats
   * the chain. */
  for (unsigned i = 0; i < b->n_layers; i++) {
    cuda_layer *l = &b->layers[i];
    double best = -1;
    for (int p = PP_PATH_OWN; p < PP_N_PATHS && !l->rowdot; p++) {
      double us;
      if (p == PP_PATH_CUBLAS && !l->lt)
        continue;
      if ((rc = time_run(b, (int) i, p, TUNE_REPS, &us, msg)) < 0)
        return rc;
      if (best < 0 || us < best) {
        best = us;
        l->path = p;
      }
    }
  }
  if (fused_fits(b)) {
    double chain, fused;
    if ((rc = time_run(b, -1, PP_N_PATHS, TUNE_REPS, &chain, msg)) < 0 ||
        (rc = time_run(b, -1, PP_PATH_FUSED, TUNE_REPS, &fused, msg)) < 0)
      return rc;
    b->fused = fused < chain;
  }
  return 0;
}

void
pp_gpu_mlp_describe(const cuda_backend *b, char *text, size_t size)
{
  if (b->fused) {
    g_strlcpy(text, "fused", size);
    return;
  }
  text[0] = '\0';
  for (unsigned i = 0; i < b->n_layers; i++) {
    if (i)
      g_strlcat(text, "+", size);
    g_strlcat(text, b->layers[i].rowdot ? "rowdot" : path_names[b->layers[i].path], size);
  }
}

int
pp_gpu_mlp_time_paths(cuda_backend *b, unsigned reps, double us[PP_N_PATHS], char **msg)
{
  for (int p = 0; p < PP_N_PATHS; p++) {
    us[p] = -1;
    if (path_fits(b, p)) {
      const int rc = time_run(b, -1, p, reps, &us[p], msg);
      if (rc < 0)
        return rc;
    }
  }
  return 0;
}
