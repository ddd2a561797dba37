/* Choosing the MLP's kernels at configure: each layer's on its fastest
 * path by timing every candidate on the real shapes (slot 0's frame of
 * random bytes), then a whole-MLP kernel where one beats the chain; or as
 * PINGPONG_CUDA_PATH says. Also cuBLASLt's plans, for a whole frame and for
 * a chunk's rows. */
#include <errno.h>
#include <string.h>

#include "backend_cuda_priv.h"
#include "stats.h"

#define TUNE_REPS 10

static bool
fused_fits(const cuda_backend *b)
{
  return b->n_layers == 2 && b->layers[1].out == 1 && b->fused_tile != PP_N_FUSED_TILES;
}

static bool
small_fits(const cuda_backend *b)
{
  return b->n_layers == 2 && b->layers[0].out <= PP_SMALL_MAX_D &&
         b->layers[1].out <= PP_ROWDOT_MAX_O;
}

static bool
path_fits(const cuda_backend *b, pp_cuda_path path)
{
  if (path == PP_PATH_FUSED)
    return fused_fits(b);
  if (path == PP_PATH_SMALL)
    return small_fits(b);
  if (path == PP_PATH_SPLIT && !b->layers[0].lt_split)
    return false;
  /* split runs the layers after the first on cublas. */
  if (path == PP_PATH_CUBLAS || path == PP_PATH_SPLIT)
    for (unsigned i = path == PP_PATH_SPLIT ? 1 : 0; i < b->n_layers; i++)
      if (!b->layers[i].rowdot && !b->layers[i].lt)
        return false;
  return path < PP_N_PATHS;
}

static unsigned
tune_reps(const cuda_backend *b)
{
  return b->quick_tune ? 1 : TUNE_REPS;
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
             : pp_gpu_mlp_run_layer(b, s, (unsigned) layer, path, s->stream, msg))
  for (unsigned i = 0; i < (b->quick_tune ? 0u : 3u) && rc == 0; i++)
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
pp_gpu_mlp_unplan_chunks(cuda_backend *b)
{
  for (unsigned i = 0; i < b->n_layers; i++) {
    pp_lt_gemm_destroy(b->layers[i].lt_chunk);
    b->layers[i].lt_chunk = NULL;
  }
  b->chunk_rows = 0;
}

void
pp_gpu_mlp_unplan(cuda_backend *b)
{
  pp_gpu_mlp_unplan_chunks(b);
  for (unsigned i = 0; i < b->n_layers; i++) {
    pp_lt_gemm_destroy(b->layers[i].lt);
    b->layers[i].lt = NULL;
  }
  if (b->n_layers)
    cuda_split_free(b);
}

/* cuBLASLt's plan for layer i on `n` rows on `path` (cublas or split), on
 * slot 0's buffers. */
static int
plan_layer(cuda_backend *b, unsigned i, pp_cuda_path path, uint32_t n, pp_lt_gemm **plan,
           char **msg)
{
  cuda_slot *s = &b->slots[0];
  const cuda_layer *l = &b->layers[i];
  const bool last = i + 1 == b->n_layers;
  const bool split = path == PP_PATH_SPLIT;
  const void *x = NULL;
  int rc = pp_gpu_mlp_layer_input(b, s, i, path, n, s->stream, &x, msg);
  if (rc < 0)
    return rc;
  const uint32_t k = split ? cuda_split_row(b) : l->in;
  const uint32_t ldx = split ? k : i == 0 ? b->layout.k : b->ldh;
  /* split's pieces are exact in TF32 (split_tf32.cu). */
  const pp_lt_math math = split || b->precision == PP_PRECISION_TF32 ? PP_LT_TF32 : PP_LT_FP32;
  BLAS_CHECK(pp_lt_gemm_plan(b->lt, n, k, l->out, ldx, last ? l->out : b->ldh,
                             split ? l->b_split : l->b, l->act, math, LT_WORKSPACE_BYTES, s->stream,
                             b->quick_tune ? 0 : PP_LT_TUNE_REPS, x, split ? l->w_split : l->w,
                             last ? s->d_out : s->d_h[i % 2], s->workspace, plan));
  return 0;
}

/* cuBLASLt for every layer it can take. All or nothing: a layer it cannot
 * plan leaves cuBLAS out of the candidates. */
static int
plan_cublas(cuda_backend *b, char **msg)
{
  for (unsigned i = 0; i < b->n_layers; i++) {
    if (b->layers[i].rowdot)
      continue;
    const int rc = plan_layer(b, i, PP_PATH_CUBLAS, b->layout.n, &b->layers[i].lt, msg);
    if (rc < 0)
      return rc;
  }
  return 0;
}

/* The split path for a first layer of bytes; none where it does not fit or
 * cuBLASLt has no plan. */
static void
plan_split(cuda_backend *b)
{
  char *why = NULL;
  if (!cuda_split_fits(b))
    return;
  if (cuda_split_weights(b, &why) < 0 ||
      plan_layer(b, 0, PP_PATH_SPLIT, b->layout.n, &b->layers[0].lt_split, &why) < 0) {
    if (b->trace)
      g_printerr("pingpong cuda split: not a candidate: %s\n", why);
    cuda_split_free(b);
  }
  g_free(why);
}

int
pp_gpu_mlp_plan_chunks(cuda_backend *b, uint32_t rows, char **msg)
{
  pp_gpu_mlp_unplan_chunks(b);
  b->chunk_rows = rows;
  const bool whole = b->whole != PP_N_PATHS;
  for (unsigned i = 0; i < b->n_layers && !whole; i++) {
    cuda_layer *l = &b->layers[i];
    if (l->rowdot || (l->path != PP_PATH_CUBLAS && l->path != PP_PATH_SPLIT))
      continue;
    const int rc = plan_layer(b, i, l->path, rows, &l->lt_chunk, msg);
    if (rc < 0) {
      pp_gpu_mlp_unplan_chunks(b);
      return rc;
    }
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
    while (p < PP_N_PATHS && strcmp(name, cuda_path_name(p)) != 0)
      p++;
    if (strcmp(name, "rowdot") == 0 && b->layers[i].rowdot)
      continue;
    if (p == PP_N_PATHS) {
      *msg = g_strdup_printf("PINGPONG_CUDA_PATH=%s: '%s' is not one of fused, small, own, "
                             "own64, cublas, split, rowdot",
                             forced, name);
      return -EINVAL;
    }
    if (p == PP_PATH_SPLIT && n > 1 && i > 0) {
      *msg = g_strdup_printf("PINGPONG_CUDA_PATH=%s: split is for the first layer only", forced);
      return -EINVAL;
    }
    if (p == PP_PATH_SPLIT && n == 1 && i > 0) {
      b->layers[i].path = PP_PATH_CUBLAS; /* split runs the later layers on cublas */
      continue;
    }
    /* Named per layer, split needs only its own plan. */
    const bool fits = p == PP_PATH_SPLIT && n > 1 ? b->layers[0].lt_split != NULL : path_fits(b, p);
    if (!fits) {
      *msg = g_strdup_printf("PINGPONG_CUDA_PATH=%s does not fit these shapes", forced);
      return -EINVAL;
    }
    if (p == PP_PATH_FUSED || p == PP_PATH_SMALL)
      b->whole = p;
    else
      b->layers[i].path = p;
  }
  return 0;
}

/* mlp_small's rows per block: the fastest of 1, 2, 4, 8 on these shapes
 * (few rows a block fill more SMs; more rows read W0 fewer times). */
static int
tune_small_rows(cuda_backend *b, double *best, char **msg)
{
  *best = -1;
  uint32_t chosen = 1;
  for (uint32_t i = 0; i < PP_SMALL_ROW_CHOICES; i++) {
    b->small_rows = 1u << i;
    double us;
    const int rc = time_run(b, -1, PP_PATH_SMALL, tune_reps(b), &us, msg);
    if (rc < 0)
      return rc;
    if (*best < 0 || us < *best) {
      *best = us;
      chosen = b->small_rows;
    }
  }
  b->small_rows = chosen;
  return 0;
}

int
pp_gpu_mlp_plan(cuda_backend *b, char **msg)
{
  b->whole = b->whole_alt = PP_N_PATHS;
  b->fused_tile = b->n_layers == 2 ? pp_cuda_fused_tile_for(b->layers[0].out) : PP_N_FUSED_TILES;
  b->small_rows = 1;
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
  plan_split(b);
  double small = -1;
  if (small_fits(b) && (rc = tune_small_rows(b, &small, msg)) < 0)
    return rc;

  const char *forced = g_getenv("PINGPONG_CUDA_PATH");
  if (forced && *forced)
    return force_paths(b, forced, msg);

  /* Each layer on its fastest kernels, then a whole-MLP kernel if one
   * beats the chain. */
  for (unsigned i = 0; i < b->n_layers; i++) {
    cuda_layer *l = &b->layers[i];
    double best = -1;
    for (int p = PP_PATH_OWN; p < PP_N_PATHS && !l->rowdot; p++) {
      double us;
      if ((p == PP_PATH_CUBLAS && !l->lt) || (p == PP_PATH_SPLIT && (i > 0 || !l->lt_split)))
        continue;
      if ((rc = time_run(b, (int) i, p, tune_reps(b), &us, msg)) < 0)
        return rc;
      if (b->trace)
        g_printerr("pingpong cuda layer %u: %s %.1f µs\n", i, cuda_path_name(p), us);
      if (best < 0 || us < best) {
        best = us;
        l->path = p;
      }
    }
  }
  double best = -1;
  if (b->n_layers == 2 && (rc = time_run(b, -1, PP_N_PATHS, tune_reps(b), &best, msg)) < 0)
    return rc;
  /* The faster whole-MLP kernel, if one fits. */
  double whole_us = small;
  pp_cuda_path whole = small >= 0 ? PP_PATH_SMALL : PP_N_PATHS;
  if (fused_fits(b)) {
    double fused;
    if ((rc = time_run(b, -1, PP_PATH_FUSED, tune_reps(b), &fused, msg)) < 0)
      return rc;
    if (whole == PP_N_PATHS || fused < whole_us) {
      whole_us = fused;
      whole = PP_PATH_FUSED;
    }
  }
  if (whole != PP_N_PATHS && whole_us < best)
    b->whole = whole;
  else
    b->whole_alt = whole; /* chunks.c gives it another chance on whole frames */
  return 0;
}

void
pp_gpu_mlp_describe(const cuda_backend *b, char *text, size_t size)
{
  if (b->whole == PP_PATH_FUSED) {
    g_strlcpy(text, "fused", size);
    return;
  }
  if (b->whole == PP_PATH_SMALL) {
    g_snprintf(text, size, "small/%u", b->small_rows);
    return;
  }
  text[0] = '\0';
  for (unsigned i = 0; i < b->n_layers; i++) {
    if (i)
      g_strlcat(text, "+", size);
    g_strlcat(text, b->layers[i].rowdot ? "rowdot" : cuda_path_name(b->layers[i].path), size);
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
