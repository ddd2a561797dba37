/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The cuBLAS paths against a float64 CPU reference on fresh random inputs,
 * outputs poisoned with NaN first: the cuBLASLt module's GEMM with its
 * epilogues (FP32 and TF32) on every algorithm the heuristic offers, each
 * rebuilt from the attributes a plan line keeps; FP32 from TF32 or FP16
 * tensor cores on a first layer's pieces (split_pieces.cu); and the
 * plain-cuBLAS reference MLP the benchmark checks against.
 *
 * Bounds as in test_cuda_kernels.c: 1e-5 for FP32 (and two pieces), 1e-3
 * for TF32 (and one). Exits 77 without a CUDA device. PP_GPU_QUICK=1
 * (set under compute-sanitizer) keeps only the small shapes. */
#include <math.h>
#include <string.h>

#include "cpu_mlp.h"
#include "cublas_reference.h"
#include "kernel_check.h"
#include "lt_table.h"

/* The module's table, linked in (libpingpong-cublaslt.so's one symbol). */
const pp_lt_table *pp_lt_module_entry(void);

#define TF32_REL_TOL 1e-3

static uint64_t seed;
static bool quick;
static const pp_act ID = { PP_ACT_IDENTITY, 0.0f }, RELU = { PP_ACT_RELU, 0.0f };

/* ---- cuBLAS paths ------------------------------------------------------------------ */

/* The GEMM of `shape` with `algo` on x and w into c, then any activation
 * the epilogue does not have, as the executor runs it. */
static void
run_gemm(const pp_lt_table *lt, void *handle, const pp_lt_shape *shape, const pp_gemm_algo *algo,
         pp_act act, const void *x, const void *w, float *c, void *workspace)
{
  pp_lt_gemm *g = NULL;
  assert_int_equal(lt->plan(handle, shape, algo, &g), 0);
  assert_int_equal(lt->run(g, kc_stream, x, w, c, workspace), 0);
  if (act.kind != PP_ACT_RELU && act.kind != PP_ACT_IDENTITY)
    CHECK_CUDA(
        pp_cuda_bias_act(kc_stream, c, PP_DTYPE_F32, shape->m, shape->n, shape->ldc, NULL, act));
  lt->free(g);
}

/* Every candidate the heuristic offers (the first under quick), each as
 * its attributes rebuild it, against the float64 reference. */
static void
check_lt(test_rng *rng, const pp_lt_table *lt, void *handle, uint32_t m, uint32_t k, uint32_t n,
         pp_act act, bool tf32)
{
  float *x = g_new(float, (size_t) m *k), *w = g_new(float, (size_t) n *k), *b = g_new(float, n);
  test_rng_fill_floats(rng, x, (size_t) m * k, -1, 1);
  test_rng_fill_floats(rng, w, (size_t) n * k, -1, 1);
  test_rng_fill_floats(rng, b, n, -1, 1);
  float *d_x = device_copy(x, (size_t) m * k * sizeof(float));
  float *d_w = device_copy(w, (size_t) n * k * sizeof(float));
  float *d_b = device_copy(b, n * sizeof(float));
  const uint32_t ldc = pp_cuda_pad4(n);
  float *d_c = device_poisoned((size_t) m * ldc);
  void *ws = device_copy(NULL, PP_LT_WORKSPACE_BYTES);
  const pp_lt_shape shape = {
    m, k, n, k, ldc, d_b, act.kind == PP_ACT_RELU, tf32, PP_DTYPE_F32, PP_DTYPE_F32, 1.0f
  };
  pp_gemm_algo algos[PP_LT_MAX_CANDIDATES];
  int found = 0;
  assert_int_equal(lt->candidates(handle, &shape, algos, PP_LT_MAX_CANDIDATES, &found), 0);
  assert_true(found > 0);
  double *ref = g_new(double, (size_t) m *n), *mag = g_new(double, (size_t) m *n);
  reference_linear(x, m, k, w, b, n, act, ref, mag);
  float *packed = g_new(float, (size_t) m *n);
  for (int i = 0; i < (quick ? 1 : found); i++) {
    CHECK_CUDA(cudaMemsetAsync(d_c, 0xFF, (size_t) m * ldc * sizeof(float), kc_stream));
    run_gemm(lt, handle, &shape, &algos[i], act, d_x, d_w, d_c, ws);
    float *c = host_result(d_c, (size_t) m * ldc);
    for (uint32_t r = 0; r < m; r++)
      memcpy(packed + (size_t) r * n, c + (size_t) r * ldc, n * sizeof(float));
    g_autofree char *what =
        g_strdup_printf("cublaslt %u×%u×%u act%d %s algorithm %d of %d (id %d)", m, k, n, act.kind,
                        tf32 ? "tf32" : "fp32", i + 1, found, algos[i].id);
    expect_close(what, packed, ref, mag, (size_t) m * n, act.kind != PP_ACT_IDENTITY,
                 tf32 ? TF32_REL_TOL : PP_FP32_REL_TOL);
    g_free(c);
  }
  g_free(x), g_free(w), g_free(b), g_free(packed), g_free(ref), g_free(mag);
  cudaFree(d_x), cudaFree(d_w), cudaFree(d_b), cudaFree(d_c), cudaFree(ws);
}

/* An algorithm cuBLAS does not have is refused at plan time: what makes a
 * stale cached plan fall back to tuning. */
static void
check_unknown_algo(const pp_lt_table *lt, void *handle)
{
  const pp_lt_shape shape = { 64,    64,    64,           64,           64,  NULL,
                              false, false, PP_DTYPE_F32, PP_DTYPE_F32, 1.0f };
  const pp_gemm_algo bogus = { .id = 100000, .splitk = 1 };
  pp_lt_gemm *g = NULL;
  assert_int_not_equal(lt->plan(handle, &shape, &bogus, &g), 0);
  assert_null(g);
}

static void
test_cublas_paths(void **state)
{
  (void) state;
  test_rng rng;
  test_rng_seed(&rng, seed + 4);
  const pp_lt_table *lt = pp_lt_module_entry();
  void *handle = NULL;
  assert_int_equal(lt->create(&handle), 0);
  check_lt(&rng, lt, handle, 1000, 777, 300, ID, false);
  check_lt(&rng, lt, handle, 1000, 777, 7, RELU, false);
  check_lt(&rng, lt, handle, 1000, 777, 300, ID, true);
  /* Activations without an epilogue of their own run after it. */
  check_lt(&rng, lt, handle, 500, 99, 37, (pp_act){ PP_ACT_GELU, 0 }, false);
  check_lt(&rng, lt, handle, 500, 99, 37, (pp_act){ PP_ACT_LEAKY_RELU, 0.1f }, false);
  check_unknown_algo(lt, handle);
  lt->destroy(handle);

  /* The plain-cuBLAS reference MLP, against the CPU. */
  cublasHandle_t blas;
  assert_int_equal(cublasCreate(&blas), CUBLAS_STATUS_SUCCESS);
  const uint32_t outs[3] = { 1, 7, 3 };
  for (int i = 0; i < 3; i++) {
    input in = make_input(&rng, PP_LAYOUT_ROWS, PP_PIXEL_RGB, 300, 300, 0);
    const uint32_t n = in.layout.n, k = in.layout.k, d = 129, o = outs[i];
    pp_model *m = NULL;
    if (i < 2) {
      m = random_model(&rng, k, d, o, i == 1, true);
    } else { /* three layers, GELU and tanh */
      const uint32_t widths[3] = { d, 65, o };
      const pp_act acts[3] = { { PP_ACT_GELU, 0 }, { PP_ACT_TANH, 0 }, ID };
      assert_int_equal(pp_model_generate_layers(k, 3, widths, acts, &m), 0);
    }
    pp_reference_layer layers[3];
    for (unsigned l = 0; l < m->n_layers; l++) {
      const pp_layer *ml = &m->layers[l];
      layers[l] = (pp_reference_layer){ device_copy(ml->w, (size_t) ml->out * ml->in * 4),
                                        device_copy(ml->b, ml->out * 4), ml->in, ml->out, ml->act };
    }
    float *xs = device_poisoned((size_t) n * k);
    void *hs[2] = { device_poisoned((size_t) n * d), device_poisoned((size_t) n * d) };
    float *d_y = device_poisoned((size_t) n * o);
    assert_int_equal(pp_cublas_reference_mlp(blas, kc_stream, &in.a, n, layers, m->n_layers, false,
                                             PP_DTYPE_F32, xs, hs, d_y),
                     CUBLAS_STATUS_SUCCESS);
    float *y = host_result(d_y, (size_t) n * o);
    double *ref = g_new(double, (size_t) n *o), *mag = g_new(double, (size_t) n *o);
    test_reference_mlp(m, in.x, n, ref, mag);
    g_autofree char *what =
        g_strdup_printf("cublas reference mlp, %u layers, O=%u", m->n_layers, o);
    expect_close(what, y, ref, mag, (size_t) n * o, true, PP_FP32_REL_TOL);
    g_free(y), g_free(ref), g_free(mag);
    for (unsigned l = 0; l < m->n_layers; l++)
      cudaFree((void *) layers[l].w), cudaFree((void *) layers[l].b);
    cudaFree(xs), cudaFree(hs[0]), cudaFree(hs[1]), cudaFree(d_y);
    pp_model_free(m);
    free_input(&in);
  }
  cublasDestroy(blas);
}

/* ---- FP32 on 16- and 19-bit tensor cores (split_pieces.cu) --------------------- */

/* A first layer as split_pieces.cu computes it: W split into `pieces`
 * pieces (TF32, or FP16 at two for bytes), with the frame's scale folded
 * in for bytes (centred and repeated) and floats split too, one GEMM
 * through cuBLASLt. W and b of a real layer's size (±0.2, ±0.5), every
 * third row of W `faint` times smaller (FP16's pieces share one scale a
 * layer); against the float64 reference, FP32's bound with two pieces
 * and TF32's with one, over all rows and over the faint rows alone. */
static void
check_split(test_rng *rng, const pp_lt_table *lt, void *handle, const char *name,
            pp_pixel_format format, pp_layout_kind kind, uint32_t m, uint32_t k, uint32_t n,
            uint32_t patch, pp_act act, unsigned pieces, float faint)
{
  input in = make_input(rng, kind, format, m, k, patch);
  m = in.layout.n;
  k = in.layout.k;
  float *w = g_new(float, (size_t) n *k), *b = g_new(float, n);
  test_rng_fill_floats(rng, w, (size_t) n * k, -0.2f, 0.2f);
  test_rng_fill_floats(rng, b, n, -0.5f, 0.5f);
  for (uint32_t r = 0; r < n; r += 3)
    for (uint32_t c = 0; c < k; c++)
      w[(size_t) r * k + c] *= faint, b[r] *= faint;
  float *d_w = device_copy(w, (size_t) n * k * sizeof(float));
  float *d_b = device_copy(b, n * sizeof(float));
  const pp_dtype type = pp_cuda_split_type(&in.a, pieces);
  const uint32_t ld =
      pp_cuda_split_blocks(pieces, pp_cuda_split_exact_x(&in.a)) * pp_cuda_split_kp(k);
  void *d_ws = device_poisoned((size_t) n * ld);
  float *d_bs = device_poisoned(n);
  void *d_xs = device_poisoned((size_t) m * ld);
  float *d_c = device_poisoned((size_t) m * n);
  void *ws = device_copy(NULL, PP_LT_WORKSPACE_BYTES);
  float alpha = 0;
  CHECK_CUDA(pp_cuda_split_weights(kc_stream, d_w, n, k, pieces, &in.a, d_b, d_ws, d_bs, &alpha));
  CHECK_CUDA(pp_cuda_split_convert(kc_stream, &in.a, m, k, pieces, d_xs));
  const pp_lt_shape shape = { m,    ld,           n,    ld, n, d_bs, act.kind == PP_ACT_RELU, true,
                              type, PP_DTYPE_F32, alpha };
  pp_gemm_algo algo;
  int found = 0;
  assert_int_equal(lt->candidates(handle, &shape, &algo, 1, &found), 0);
  CHECK_CUDA(cudaMemsetAsync(d_c, 0xFF, (size_t) m * n * sizeof(float), kc_stream));
  run_gemm(lt, handle, &shape, &algo, act, d_xs, d_ws, d_c, ws);
  float *c = host_result(d_c, (size_t) m * n);
  double *ref = g_new(double, (size_t) m *n), *mag = g_new(double, (size_t) m *n);
  reference_linear(in.x, m, k, w, b, n, act, ref, mag);
  const double tol = pieces >= 2 ? PP_FP32_REL_TOL : TF32_REL_TOL;
  g_autofree char *what = g_strdup_printf("%s ×%u %s %u×%u×%u act%d", pp_dtype_name(type), pieces,
                                          name, m, k, n, act.kind);
  expect_close(what, c, ref, mag, (size_t) m * n, act.kind != PP_ACT_IDENTITY, tol);
  if (faint != 1.f) {
    /* The faint rows' outputs alone: each every third column of C. */
    const uint32_t faint_n = (n + 2) / 3;
    float *fc = g_new(float, (size_t) m *faint_n);
    double *fref = g_new(double, (size_t) m *faint_n), *fmag = g_new(double, (size_t) m *faint_n);
    for (uint32_t i = 0; i < m; i++)
      for (uint32_t j = 0; j < faint_n; j++) {
        fc[(size_t) i * faint_n + j] = c[(size_t) i * n + 3 * j];
        fref[(size_t) i * faint_n + j] = ref[(size_t) i * n + 3 * j];
        fmag[(size_t) i * faint_n + j] = mag[(size_t) i * n + 3 * j];
      }
    g_autofree char *faint_what = g_strdup_printf("%s, rows ×%g alone", what, faint);
    expect_close(faint_what, fc, fref, fmag, (size_t) m * faint_n, act.kind != PP_ACT_IDENTITY,
                 tol);
    g_free(fc), g_free(fref), g_free(fmag);
  }
  g_free(w), g_free(b), g_free(c), g_free(ref), g_free(mag);
  cudaFree(d_w), cudaFree(d_b), cudaFree(d_ws), cudaFree(d_bs), cudaFree(d_xs), cudaFree(d_c);
  cudaFree(ws);
  free_input(&in);
}

static void
test_split_pieces(void **state)
{
  (void) state;
  test_rng rng;
  test_rng_seed(&rng, seed + 6);
  const pp_lt_table *lt = pp_lt_module_entry();
  void *handle = NULL;
  assert_int_equal(lt->create(&handle), 0);
  for (unsigned pieces = 1; pieces <= 2; pieces++) {
    /* K a multiple of no 8 (padding), gathers, and a ReLU. */
    check_split(&rng, lt, handle, "gray8 rows", PP_PIXEL_GRAY8, PP_LAYOUT_ROWS, 300, 777, 129, 0,
                ID, pieces, 1.f);
    check_split(&rng, lt, handle, "bgr patches (gather)", PP_PIXEL_BGR, PP_LAYOUT_PATCHES, 300, 0,
                33, 7, RELU, pieces, 1.f);
    check_split(&rng, lt, handle, "rgb patches (u8x4)", PP_PIXEL_RGB, PP_LAYOUT_PATCHES, 200, 0, 64,
                8, RELU, pieces, 1.f);
    /* Rows of W 2^-12 and 2^-18 of the rest: FP16's shared scale keeps
     * both pieces whole there. */
    check_split(&rng, lt, handle, "rgb patches, faint rows", PP_PIXEL_RGB, PP_LAYOUT_PATCHES, 200,
                0, 64, 8, ID, pieces, 1.f / 4096);
    check_split(&rng, lt, handle, "gray8 rows, fainter rows", PP_PIXEL_GRAY8, PP_LAYOUT_ROWS, 300,
                256, 96, 0, ID, pieces, 1.f / 262144);
    /* Floats, split too: K a multiple of no 8, and balanced's first layer. */
    check_split(&rng, lt, handle, "floats", PP_PIXEL_GRAY8, PP_LAYOUT_TENSOR, 300, 333, 65, 0, RELU,
                pieces, 1.f);
    if (!quick) {
      check_split(&rng, lt, handle, "seed layer 1", PP_PIXEL_GRAY8, PP_LAYOUT_ROWS, 1024, 1024,
                  1024, 0, RELU, pieces, 1.f);
      check_split(&rng, lt, handle, "balanced layer 1", PP_PIXEL_GRAY8, PP_LAYOUT_TENSOR, 4096, 256,
                  1024, 0, ID, pieces, 1.f);
    }
  }
  /* A frame of bytes without its offsets is refused. */
  const pp_cuda_a bytes = { .kind = PP_A_U8_GATHER, .data = (void *) 16, .per_row = 1 };
  assert_int_equal(pp_cuda_split_convert(kc_stream, &bytes, 1, 4, 2, (void *) 16),
                   cudaErrorInvalidValue);
  lt->destroy(handle);
}

int
main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_cublas_paths),
    cmocka_unit_test(test_split_pieces),
  };
  return kc_main("cuda-blas", tests, G_N_ELEMENTS(tests), &seed, &quick);
}
