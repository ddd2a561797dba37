/* Running the MLP on the GPU, layer by layer: each layer's kernels (our
 * GEMM with the bias and activation in its epilogue, 128×128 or 64×64
 * tiles; cuBLASLt with its bias/ReLU epilogue; the row-dot kernel for a
 * last layer with few outputs), the intermediate activations taking turns
 * in two buffers; or a two-layer model whole in one kernel (mlp_fused for
 * large frames, mlp_small for small ones). On a whole frame, a chunk of its
 * rows, or a frame read in place. The weights are weights.c's, the choice
 * of kernels mlp_plan.c's. */
#include <errno.h>
#include <string.h>

#include "backend_cuda_priv.h"
#include "stats.h"

static const char *const path_names[PP_N_PATHS] = {
  [PP_PATH_FUSED] = "fused",  [PP_PATH_SMALL] = "small",   [PP_PATH_OWN] = "own",
  [PP_PATH_OWN_64] = "own64", [PP_PATH_CUBLAS] = "cublas", [PP_PATH_SPLIT] = "split",
};

const char *
cuda_path_name(pp_cuda_path path)
{
  return path < PP_N_PATHS ? path_names[path] : "?";
}

/* ---- running ---------------------------------------------------------------- */

/* The samples [row0, row0 + n) of slot s's frame: the whole frame, or one
 * chunk of it (chunks.c). Every buffer is read and written from row0 on. */
typedef struct {
  uint32_t row0, n;
  pp_cuda_a x;      /* the frame from sample row0 on */
  float *whole_out; /* where the last layer (or a whole-MLP kernel) writes row0's results */
  bool converted;   /* the frame's bytes are in d_x already, as the first layer reads them */
  unsigned signal;  /* a whole-MLP kernel raises the slot's done signal with this, if not 0 */
} rows_view;

static rows_view
view_rows(const cuda_backend *b, const cuda_slot *s, uint32_t row0, uint32_t n)
{
  rows_view v = { row0, n, s->x, s->d_out + (size_t) row0 * b->o, false, 0 };
  /* Chunks start at a whole row of samples (chunks.c), so sample row0's
   * origin is that row's first byte and the others follow from it. */
  if (v.x.kind == PP_A_F32)
    v.x.data = (const float *) v.x.data + (size_t) row0 * v.x.ld;
  else if (row0)
    v.x.data = (const uint8_t *) v.x.data + (size_t) (row0 / v.x.per_row) * v.x.row_step;
  return v;
}

/* Where layer i reads its input through cuBLASLt: the previous layer's
 * floats, or the frame's, converted first when it is bytes (to floats for
 * cublas, to TF32 pieces for split). */
static int
gemm_input(cuda_backend *b, cuda_slot *s, const rows_view *v, unsigned i, pp_cuda_path path,
           cudaStream_t stream, const void **x, char **msg)
{
  if (i > 0) {
    *x = s->d_h[(i - 1) % 2] + (size_t) v->row0 * b->ldh;
    return 0;
  }
  *x = v->x.data;
  if (path == PP_PATH_SPLIT) {
    const uint32_t row = cuda_split_row(b);
    float *dst = (float *) s->d_x + (size_t) v->row0 * row;
    if (!v->converted)
      CUDA_CHECK(
          pp_cuda_split_convert(stream, &v->x, v->n, b->layout.k, cuda_split_pieces(b), dst));
    *x = dst;
  } else if (s->x.kind != PP_A_F32) {
    float *dst = (float *) s->d_x + (size_t) v->row0 * b->layout.k;
    if (!v->converted)
      CUDA_CHECK(pp_cuda_convert(stream, &v->x, v->n, b->layout.k, dst, b->layout.k));
    *x = dst;
  }
  return 0;
}

/* cuBLASLt's plan for this many rows on `path`: the frame's, or a
 * chunk's (planned for the chosen path only). */
static const pp_lt_gemm *
lt_for(const cuda_layer *l, const cuda_backend *b, pp_cuda_path path, uint32_t n)
{
  if (n == b->layout.n)
    return path == PP_PATH_SPLIT ? l->lt_split : l->lt;
  return n == b->chunk_rows && path == l->path ? l->lt_chunk : NULL;
}

static int
run_layer(cuda_backend *b, cuda_slot *s, const rows_view *v, unsigned i, pp_cuda_path path,
          cudaStream_t stream, char **msg)
{
  const cuda_layer *l = &b->layers[i];
  const uint32_t n = v->n;
  const bool last = i + 1 == b->n_layers;
  const uint32_t ldc = last ? l->out : b->ldh;
  /* The last layer writes where the view's results go: the slot's, or the
   * pinned result itself when the frame is read in place. */
  float *out = last ? v->whole_out : s->d_h[i % 2] + (size_t) v->row0 * ldc;
  if (l->rowdot) {
    CUDA_CHECK(pp_cuda_rowdot(stream, s->d_h[(i - 1) % 2] + (size_t) v->row0 * b->ldh, n, l->in,
                              b->ldh, l->w, l->b, l->out, l->act, out));
    return 0;
  }
  switch (path) {
    case PP_PATH_OWN:
    case PP_PATH_OWN_64: {
      pp_cuda_a x = i == 0 ? v->x : s->h[(i - 1) % 2];
      if (i > 0)
        x.data = (const float *) x.data + (size_t) v->row0 * b->ldh;
      const pp_gemm_tile tile = path == PP_PATH_OWN ? PP_TILE_128x128 : PP_TILE_64x64;
      CUDA_CHECK(
          pp_cuda_gemm(stream, &x, n, l->in, l->wt, l->ldw, l->b, l->out, l->act, out, ldc, tile));
      return 0;
    }
    case PP_PATH_CUBLAS:
    case PP_PATH_SPLIT: {
      const void *x = NULL;
      const int rc = gemm_input(b, s, v, i, path, stream, &x, msg);
      if (rc < 0)
        return rc;
      const pp_lt_gemm *lt = lt_for(l, b, path, n);
      if (!lt) {
        *msg = g_strdup_printf("cuBLASLt has no %s plan for layer %u on %u rows",
                               cuda_path_name(path), i + 1, n);
        return -EINVAL;
      }
      BLAS_CHECK(pp_lt_gemm_run(lt, stream, x, path == PP_PATH_SPLIT ? l->w_split : l->w, out,
                                s->workspace));
      return 0;
    }
    default:
      *msg = g_strdup_printf("no kernels chosen for layer %u", i + 1);
      return -EINVAL;
  }
}

static int
run_fused(cuda_backend *b, cuda_slot *s, const rows_view *v, cudaStream_t stream, char **msg)
{
  const cuda_layer *l0 = &b->layers[0], *l1 = &b->layers[1];
  (void) s;
  CUDA_CHECK(pp_cuda_mlp_fused(stream, &v->x, v->n, b->layout.k, l0->wt, l0->ldw, l0->b, l0->out,
                               l0->act, l1->w, l1->b, l1->act, v->whole_out, b->fused_tile));
  return 0;
}

static int
run_small(cuda_backend *b, cuda_slot *s, const rows_view *v, cudaStream_t stream, char **msg)
{
  const cuda_layer *l0 = &b->layers[0], *l1 = &b->layers[1];
  const pp_cuda_done_signal done = { s->d_done_count, s->d_done_flag, v->signal };
  CUDA_CHECK(pp_cuda_mlp_small(stream, &v->x, v->n, b->layout.k, l0->wt, l0->ldw, l0->b, l0->out,
                               l0->act, l1->w, l1->b, l1->out, l1->act, v->whole_out, b->small_rows,
                               v->signal ? &done : NULL));
  return 0;
}

static int
run_view(cuda_backend *b, cuda_slot *s, const rows_view *v, pp_cuda_path force, cudaStream_t stream,
         char **msg)
{
  const pp_cuda_path whole = force == PP_N_PATHS ? b->whole : force;
  if (whole == PP_PATH_FUSED)
    return run_fused(b, s, v, stream, msg);
  if (whole == PP_PATH_SMALL)
    return run_small(b, s, v, stream, msg);
  for (unsigned i = 0; i < b->n_layers; i++) {
    pp_cuda_path path = force == PP_N_PATHS ? b->layers[i].path : force;
    if (path == PP_PATH_SPLIT && i > 0)
      path = PP_PATH_CUBLAS; /* split is for bytes: the first layer's */
    const int rc = run_layer(b, s, v, i, path, stream, msg);
    if (rc < 0)
      return rc;
  }
  return 0;
}

int
pp_gpu_mlp_run_rows(cuda_backend *b, cuda_slot *s, pp_cuda_path force, cudaStream_t stream,
                    uint32_t row0, uint32_t n, char **msg)
{
  const rows_view v = view_rows(b, s, row0, n);
  return run_view(b, s, &v, force, stream, msg);
}

bool
pp_gpu_mlp_is_whole(const cuda_backend *b)
{
  return b->whole != PP_N_PATHS;
}

/* ---- in place, layer by layer ---------------------------------------------- */

/* Whether layer 0 reads the frame only through a conversion (cuBLAS on
 * bytes: to floats, or to TF32 pieces), its GEMM then reading d_x. */
static bool
converts_first(const cuda_backend *b, const cuda_slot *s)
{
  const pp_cuda_path path = b->layers[0].path;
  return (path == PP_PATH_CUBLAS || path == PP_PATH_SPLIT) && s->x.kind != PP_A_F32;
}

bool
pp_gpu_mlp_has_between(const cuda_backend *b)
{
  if (pp_gpu_mlp_is_whole(b) || b->n_layers < 2)
    return false;
  return converts_first(b, &b->slots[0]) || b->n_layers > 2;
}

/* Layer 0's GEMM on the converted floats (when it converts first), then
 * every layer but the first and the last. */
int
pp_gpu_mlp_run_between(cuda_backend *b, cuda_slot *s, cudaStream_t stream, char **msg)
{
  rows_view v = view_rows(b, s, 0, b->layout.n);
  v.converted = true;
  const unsigned from = converts_first(b, s) ? 0 : 1;
  for (unsigned i = from; i + 1 < b->n_layers; i++) {
    const int rc = run_layer(b, s, &v, i, b->layers[i].path, stream, msg);
    if (rc < 0)
      return rc;
  }
  return 0;
}

/* A frame read in place, layer by layer, in three parts: the frame's reader
 * (the conversion, or layer 0 itself), the slot's graph of what runs
 * between, the last layer into the result. Each direct cuBLASLt call costs
 * the submitting thread tens of µs (seed in place with every kernel
 * launched directly: submit 58-67 µs a frame against 27 through copies
 * and the slot's graph; H100), so cuBLAS stays in the graph. */
static int
run_in_place_layers(cuda_backend *b, cuda_slot *s, const rows_view *v, cudaStream_t stream,
                    char **msg)
{
  const unsigned last = b->n_layers - 1;
  int rc;
  if (converts_first(b, s)) {
    const void *x = NULL;
    rc = gemm_input(b, s, v, 0, b->layers[0].path, stream, &x, msg);
  } else {
    rc = run_layer(b, s, v, 0, b->layers[0].path, stream, msg);
  }
  if (rc < 0)
    return rc;
  CUDA_CHECK(cudaGraphLaunch(s->between_exec, stream));
  return run_layer(b, s, v, last, b->layers[last].path, stream, msg);
}

int
pp_gpu_mlp_run_in_place(cuda_backend *b, cuda_slot *s, const void *frame, float *out,
                        cudaStream_t stream, char **msg)
{
  rows_view v = view_rows(b, s, 0, b->layout.n);
  v.x.data = frame;
  v.whole_out = out;
  v.signal = s->signal_seq;
  if (s->between_exec)
    return run_in_place_layers(b, s, &v, stream, msg);
  return run_view(b, s, &v, PP_N_PATHS, stream, msg);
}

bool
pp_gpu_mlp_can_signal(const cuda_backend *b)
{
  return b->whole == PP_PATH_SMALL;
}

int
pp_gpu_mlp_run(cuda_backend *b, cuda_slot *s, pp_cuda_path force, cudaStream_t stream, char **msg)
{
  return pp_gpu_mlp_run_rows(b, s, force, stream, 0, b->layout.n, msg);
}

/* For mlp_plan.c: layer i alone on the whole frame, and where layer i
 * reads its first n rows as floats. */
int
pp_gpu_mlp_run_layer(cuda_backend *b, cuda_slot *s, unsigned i, pp_cuda_path path,
                     cudaStream_t stream, char **msg)
{
  const rows_view whole = view_rows(b, s, 0, b->layout.n);
  return run_layer(b, s, &whole, i, path, stream, msg);
}

int
pp_gpu_mlp_layer_input(cuda_backend *b, cuda_slot *s, unsigned i, pp_cuda_path path, uint32_t n,
                       cudaStream_t stream, const void **x, char **msg)
{
  const rows_view rows = view_rows(b, s, 0, n);
  return gemm_input(b, s, &rows, i, path, stream, x, msg);
}
