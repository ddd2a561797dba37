/* Every CUDA kernel against a float64 CPU reference on fresh random inputs,
 * its output poisoned with NaN first so an unwritten element fails, at
 * shapes that are multiples of no tile (N=1000, K=777, D=300, O=1 and 7) and
 * at the reference workloads' shapes.
 *
 * Bounds: ‖out − ref‖/‖ref‖ ≤ 1e-5 for FP32 without a final ReLU; with one,
 * the same norm over the magnitude of the sums (testutil.h); TF32 (cuBLASLt):
 * ≤ 1e-3 (2.6e-4 measured on the H100), its 10-bit mantissa rounding each input once
 * (unit roundoff 4.9e-4).
 * Exits 77 without a CUDA device. PP_GPU_QUICK=1 (set under
 * compute-sanitizer) keeps only the small shapes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <glib.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cpu_mlp.h"
#include "cublas_reference.h"
#include "cuda_kernels.h"
#include "frame.h"
#include "gemm_cublaslt.h"
#include "testutil.h"

#define TF32_REL_TOL 1e-3

static uint64_t seed;
static cudaStream_t stream;
static bool quick;

#define CHECK_CUDA(call)                                                                           \
  do {                                                                                             \
    const cudaError_t err_ = (call);                                                               \
    if (err_ != cudaSuccess)                                                                       \
      fail_msg("%s: %s", #call, cudaGetErrorString(err_));                                         \
  } while (0)

static void *
device_copy(const void *host, size_t bytes)
{
  void *d = NULL;
  CHECK_CUDA(cudaMalloc(&d, bytes ? bytes : 4));
  if (host && bytes)
    CHECK_CUDA(cudaMemcpyAsync(d, host, bytes, cudaMemcpyHostToDevice, stream));
  return d;
}

/* A device buffer of n floats, all NaN (0xFF bytes). */
static float *
device_poisoned(size_t n)
{
  float *d = device_copy(NULL, n * sizeof(float));
  CHECK_CUDA(cudaMemsetAsync(d, 0xFF, n * sizeof(float), stream));
  return d;
}

static float *
host_result(const float *d, size_t n)
{
  float *h = g_new(float, n);
  CHECK_CUDA(cudaMemcpyAsync(h, d, n * sizeof(float), cudaMemcpyDeviceToHost, stream));
  CHECK_CUDA(cudaStreamSynchronize(stream));
  return h;
}

/* An input X as the kernels read it, and the same X as floats for the
 * reference. */
typedef struct {
  pp_frame_layout layout;
  pp_cuda_a a;
  float *x;      /* host, n×k */
  void *d_frame; /* device */
  int32_t *h_koff, *d_koff;
} input;

static input
make_input(test_rng *rng, pp_layout_kind kind, pp_pixel_format format, uint32_t n, uint32_t k,
           uint32_t patch)
{
  input in = { 0 };
  char *msg = NULL;
  if (kind == PP_LAYOUT_TENSOR) {
    assert_int_equal(pp_layout_for_tensor(n, k, &in.layout, &msg), 0);
    in.x = g_new(float, (size_t) n *k);
    test_rng_fill_floats(rng, in.x, (size_t) n * k, -1, 1);
    in.d_frame = device_copy(in.x, (size_t) n * k * sizeof(float));
  } else {
    /* n and k describe X; find a frame that gives them. */
    const uint32_t channels = pp_pixel_channels(format);
    uint32_t width, height;
    if (kind == PP_LAYOUT_ROWS) {
      width = k / channels;
      height = n;
    } else {
      width = (uint32_t) (sqrt((double) n) + 0.5) * patch + patch / 2; /* a ragged edge */
      height = n / (width / patch) * patch + 1;
    }
    const uint32_t stride = ((width * (format == PP_PIXEL_GRAY8 ? 1
                                       : format <= PP_PIXEL_BGR ? 3
                                                                : 4)) +
                             3) /
                            4 * 4;
    const pp_mapping mapping = kind == PP_LAYOUT_ROWS ? PP_MAPPING_ROWS : PP_MAPPING_PATCHES;
    assert_int_equal(
        pp_layout_for_video(format, width, height, stride, mapping, patch, &in.layout, &msg), 0);
    uint8_t *frame = g_malloc(in.layout.frame_bytes);
    test_rng_fill_bytes(rng, frame, in.layout.frame_bytes);
    in.x = g_new(float, (size_t) in.layout.n *in.layout.k);
    pp_cpu_gather(&in.layout, frame, in.x);
    in.d_frame = device_copy(frame, in.layout.frame_bytes);
    g_free(frame);
  }
  in.h_koff = g_new(int32_t, in.layout.k);
  if (kind != PP_LAYOUT_TENSOR) {
    pp_cuda_k_offsets(&in.layout, in.h_koff);
    in.d_koff = device_copy(in.h_koff, in.layout.k * sizeof(int32_t));
  }
  in.a = pp_cuda_a_for_layout(&in.layout, in.h_koff, in.d_frame, in.d_koff);
  return in;
}

static void
free_input(input *in)
{
  g_free(in->x);
  g_free(in->h_koff);
  cudaFree(in->d_frame);
  cudaFree(in->d_koff);
}

/* Wt (k×ldw, zero-padded) from W (n×k). */
static float *
transposed(const float *w, uint32_t n, uint32_t k, uint32_t ldw)
{
  float *t = g_new0(float, (size_t) k *ldw);
  for (uint32_t r = 0; r < n; r++)
    for (uint32_t c = 0; c < k; c++)
      t[(size_t) c * ldw + r] = w[(size_t) r * k + c];
  return t;
}

/* C = act(X·Wᵀ + b) in double, and the magnitude of each sum. */
static void
reference_linear(const float *x, uint32_t m, uint32_t k, const float *w, const float *bias,
                 uint32_t n, pp_act act, double *out, double *mag)
{
  for (uint32_t r = 0; r < m; r++)
    for (uint32_t c = 0; c < n; c++) {
      double sum = bias ? bias[c] : 0, abs_sum = bias ? fabs(bias[c]) : 0;
      const float *xr = x + (size_t) r * k, *wr = w + (size_t) c * k;
      for (uint32_t i = 0; i < k; i++) {
        sum += (double) xr[i] * wr[i];
        abs_sum += fabs((double) xr[i] * wr[i]);
      }
      out[(size_t) r * n + c] = test_activation(act, sum);
      mag[(size_t) r * n + c] = abs_sum;
    }
}

static void
expect_close(const char *what, const float *got, const double *ref, const double *mag, size_t n,
             bool scaled, double tol)
{
  const double err =
      scaled ? test_scaled_error(got, ref, mag, n) : test_relative_error(got, ref, n);
  print_message("%-52s error %.2e (bound %.0e)\n", what, err, tol);
  if (!(err <= tol))
    fail_msg("%s: error %.3e > %.0e", what, err, tol);
}

/* ---- GEMM ------------------------------------------------------------------ */

static void
check_gemm(test_rng *rng, const char *name, pp_layout_kind kind, pp_pixel_format format, uint32_t m,
           uint32_t k, uint32_t n, uint32_t patch, bool bias, pp_act act, pp_gemm_tile tile)
{
  input in = make_input(rng, kind, format, m, k, patch);
  m = in.layout.n;
  k = in.layout.k;
  float *w = g_new(float, (size_t) n *k), *b = g_new(float, n);
  test_rng_fill_floats(rng, w, (size_t) n * k, -1, 1);
  test_rng_fill_floats(rng, b, n, -1, 1);
  const uint32_t ldw = pp_cuda_pad4(n), ldc = n + 3; /* a ragged ldc too */
  float *wt = transposed(w, n, k, ldw);
  float *d_wt = device_copy(wt, (size_t) k * ldw * sizeof(float));
  float *d_b = device_copy(b, n * sizeof(float));
  float *d_c = device_poisoned((size_t) m * ldc);
  CHECK_CUDA(
      pp_cuda_gemm(stream, &in.a, m, k, d_wt, ldw, bias ? d_b : NULL, n, act, d_c, ldc, tile));
  float *c = host_result(d_c, (size_t) m * ldc);
  float *packed = g_new(float, (size_t) m *n);
  for (uint32_t r = 0; r < m; r++)
    memcpy(packed + (size_t) r * n, c + (size_t) r * ldc, n * sizeof(float));
  double *ref = g_new(double, (size_t) m *n), *mag = g_new(double, (size_t) m *n);
  reference_linear(in.x, m, k, w, bias ? b : NULL, n, act, ref, mag);
  g_autofree char *what = g_strdup_printf("gemm %s %u×%u×%u %s act%d tile%d", name, m, k, n,
                                          bias ? "+bias" : "", act.kind, tile);
  expect_close(what, packed, ref, mag, (size_t) m * n, act.kind != PP_ACT_IDENTITY,
               PP_FP32_REL_TOL);
  g_free(w), g_free(b), g_free(wt), g_free(c), g_free(packed), g_free(ref), g_free(mag);
  cudaFree(d_wt), cudaFree(d_b), cudaFree(d_c);
  free_input(&in);
}

static const pp_act ID = { PP_ACT_IDENTITY, 0.0f }, RELU = { PP_ACT_RELU, 0.0f };

/* Every activation in the GEMM's epilogue, on both tiles. */
static void
test_gemm_activations(void **state)
{
  (void) state;
  test_rng rng;
  test_rng_seed(&rng, seed + 5);
  for (int kind = 0; kind < PP_N_ACTS; kind++)
    for (int tile = 0; tile < PP_N_GEMM_TILES; tile++)
      check_gemm(&rng, "rgb patches", PP_LAYOUT_PATCHES, PP_PIXEL_RGB, 300, 0, 37, 5, true,
                 (pp_act){ (pp_act_kind) kind, 0.1f }, tile);
}

static void
test_gemm(void **state)
{
  (void) state;
  test_rng rng;
  test_rng_seed(&rng, seed);
  for (int tile = 0; tile < PP_N_GEMM_TILES; tile++) {
    check_gemm(&rng, "f32", PP_LAYOUT_TENSOR, 0, 1000, 777, 300, 0, true, ID, tile);
    check_gemm(&rng, "f32", PP_LAYOUT_TENSOR, 0, 1000, 777, 7, 0, false, RELU, tile);
    check_gemm(&rng, "gray8 rows", PP_LAYOUT_ROWS, PP_PIXEL_GRAY8, 1000, 776, 300, 0, true, RELU,
               tile);
    check_gemm(&rng, "bgr patches (gather)", PP_LAYOUT_PATCHES, PP_PIXEL_BGR, 300, 0, 33, 7, true,
               ID, tile);
    check_gemm(&rng, "rgbx rows (gather)", PP_LAYOUT_ROWS, PP_PIXEL_RGBX, 100, 777, 65, 0, true,
               RELU, tile);
    check_gemm(&rng, "rgb patches (u8x4)", PP_LAYOUT_PATCHES, PP_PIXEL_RGB, 500, 0, 256, 8, true,
               RELU, tile);
  }
  if (quick)
    return;
  check_gemm(&rng, "seed layer 1", PP_LAYOUT_ROWS, PP_PIXEL_GRAY8, 1024, 1024, 1024, 0, true, ID,
             PP_TILE_128x128);
  check_gemm(&rng, "tiny layer 1", PP_LAYOUT_ROWS, PP_PIXEL_GRAY8, 256, 256, 64, 0, true, ID,
             PP_TILE_64x64);
  check_gemm(&rng, "balanced layer 1", PP_LAYOUT_TENSOR, 0, 4096, 256, 1024, 0, true, ID,
             PP_TILE_128x128);
  check_gemm(&rng, "balanced layer 2", PP_LAYOUT_TENSOR, 0, 4096, 1024, 256, 0, true, RELU,
             PP_TILE_128x128);
}

/* ---- the fused MLP and the row-dot layer 2 ------------------------------------ */

static pp_model *
random_model(test_rng *rng, uint32_t k, uint32_t d, uint32_t o, bool hidden_relu, bool bias)
{
  pp_model *m = NULL;
  assert_int_equal(pp_model_generate(k, d, o, hidden_relu ? PP_HIDDEN_RELU : PP_HIDDEN_NONE, &m),
                   0);
  /* Fresh values each run, wider biases so they matter. */
  test_rng_fill_floats(rng, m->layers[0].w, (size_t) d * k, -0.2f, 0.2f);
  test_rng_fill_floats(rng, m->layers[1].w, (size_t) o * d, -0.2f, 0.2f);
  test_rng_fill_floats(rng, m->layers[0].b, d, -0.5f, 0.5f);
  test_rng_fill_floats(rng, m->layers[1].b, o, -0.5f, 0.5f);
  if (!bias) {
    g_clear_pointer(&m->layers[0].b, g_free);
    g_clear_pointer(&m->layers[1].b, g_free);
  }
  return m;
}

/* The whole two-layer MLP in one kernel: mlp_fused (O = 1; rows = 0) or
 * mlp_small with `rows` rows per block. */
static void
check_whole(test_rng *rng, const char *name, pp_layout_kind kind, pp_pixel_format format,
            uint32_t n, uint32_t k, uint32_t d, uint32_t o, uint32_t patch, pp_act hidden,
            pp_act out, bool bias, uint32_t rows)
{
  input in = make_input(rng, kind, format, n, k, patch);
  n = in.layout.n;
  k = in.layout.k;
  pp_model *m = random_model(rng, k, d, o, false, bias);
  m->layers[0].act = hidden;
  m->layers[1].act = out;
  const uint32_t ldw = pp_cuda_pad4(d);
  float *w0t = transposed(m->layers[0].w, d, k, ldw);
  float *d_w0t = device_copy(w0t, (size_t) k * ldw * sizeof(float));
  float *d_b0 = bias ? device_copy(m->layers[0].b, d * sizeof(float)) : NULL;
  float *d_w1 = device_copy(m->layers[1].w, (size_t) o * d * sizeof(float));
  float *d_b1 = bias ? device_copy(m->layers[1].b, o * sizeof(float)) : NULL;
  float *d_y = device_poisoned((size_t) n * o);
  if (rows == 0)
    CHECK_CUDA(pp_cuda_mlp_fused(stream, &in.a, n, k, d_w0t, ldw, d_b0, d, hidden, d_w1, d_b1, out,
                                 d_y, pp_cuda_fused_tile_for(d)));
  else
    CHECK_CUDA(pp_cuda_mlp_small(stream, &in.a, n, k, d_w0t, ldw, d_b0, d, hidden, d_w1, d_b1, o,
                                 out, d_y, rows));
  float *y = host_result(d_y, (size_t) n * o);
  double *ref = g_new(double, (size_t) n *o), *mag = g_new(double, (size_t) n *o);
  test_reference_mlp(m, in.x, n, ref, mag);
  g_autofree char *what =
      g_strdup_printf("%s mlp %s %u×%u→%u→%u act%d, act%d (rows %u)", rows ? "small" : "fused",
                      name, n, k, d, o, hidden.kind, out.kind, rows);
  expect_close(what, y, ref, mag, (size_t) n * o, true, PP_FP32_REL_TOL);
  g_free(w0t), g_free(y), g_free(ref), g_free(mag);
  cudaFree(d_w0t), cudaFree(d_b0), cudaFree(d_w1), cudaFree(d_b1), cudaFree(d_y);
  pp_model_free(m);
  free_input(&in);
}

static void
check_fused(test_rng *rng, const char *name, pp_layout_kind kind, pp_pixel_format format,
            uint32_t n, uint32_t k, uint32_t d, uint32_t patch, pp_act hidden, pp_act out,
            bool bias)
{
  check_whole(rng, name, kind, format, n, k, d, 1, patch, hidden, out, bias, 0);
}

static void
test_fused_mlp(void **state)
{
  (void) state;
  test_rng rng;
  test_rng_seed(&rng, seed + 1);
  check_fused(&rng, "f32", PP_LAYOUT_TENSOR, 0, 1000, 777, 200, 0, RELU, RELU, true);
  check_fused(&rng, "f32", PP_LAYOUT_TENSOR, 0, 1000, 777, 61, 0, ID, RELU, false);
  check_fused(&rng, "bgra rows", PP_LAYOUT_ROWS, PP_PIXEL_BGRA, 333, 300, 100, 0, RELU, RELU, true);
  check_fused(&rng, "f32 gelu, plain out", PP_LAYOUT_TENSOR, 0, 500, 99, 130, 0,
              (pp_act){ PP_ACT_GELU, 0 }, ID, true);
  check_fused(&rng, "f32 silu, sigmoid", PP_LAYOUT_TENSOR, 0, 500, 99, 33, 0,
              (pp_act){ PP_ACT_SILU, 0 }, (pp_act){ PP_ACT_SIGMOID, 0 }, true);
  if (quick)
    return;
  check_fused(&rng, "tiny", PP_LAYOUT_ROWS, PP_PIXEL_GRAY8, 256, 256, 64, 0, ID, RELU, true);
  check_fused(&rng, "hd", PP_LAYOUT_PATCHES, PP_PIXEL_RGB, 32400, 0, 256, 8, ID, RELU, true);
}

/* mlp_small on every rows-per-block choice and hidden width class, with
 * ragged row counts (not a multiple of the rows per block), K past one
 * 256-input pass, several outputs, and every way of reading X. */
static void
test_small_mlp(void **state)
{
  (void) state;
  test_rng rng;
  test_rng_seed(&rng, seed + 9);
  const pp_act gelu = { PP_ACT_GELU, 0 }, silu = { PP_ACT_SILU, 0 };
  for (uint32_t i = 0; i < PP_SMALL_ROW_CHOICES; i++) {
    const uint32_t rows = 1u << i;
    check_whole(&rng, "tiny", PP_LAYOUT_ROWS, PP_PIXEL_GRAY8, 256, 256, 64, 1, 0, ID, RELU, true,
                rows);
    check_whole(&rng, "f32", PP_LAYOUT_TENSOR, 0, 301, 777, 200, 3, 0, RELU, ID, true, rows);
    check_whole(&rng, "f32 narrow", PP_LAYOUT_TENSOR, 0, 99, 37, 20, 32, 0, gelu, silu, false,
                rows);
    check_whole(&rng, "bgra rows (gather)", PP_LAYOUT_ROWS, PP_PIXEL_BGRA, 77, 300, 100, 2, 0, RELU,
                RELU, true, rows);
    check_whole(&rng, "rgb patches (u8x4)", PP_LAYOUT_PATCHES, PP_PIXEL_RGB, 120, 0, 256, 1, 8, ID,
                RELU, true, rows);
  }
}

static void
check_rowdot(test_rng *rng, uint32_t n, uint32_t d, uint32_t o, uint32_t ldh, pp_act act)
{
  float *h = g_new(float, (size_t) n *ldh), *w = g_new(float, (size_t) o *d), *b = g_new(float, o);
  test_rng_fill_floats(rng, h, (size_t) n * ldh, -1, 1);
  test_rng_fill_floats(rng, w, (size_t) o * d, -1, 1);
  test_rng_fill_floats(rng, b, o, -1, 1);
  float *d_h = device_copy(h, (size_t) n * ldh * sizeof(float));
  float *d_w = device_copy(w, (size_t) o * d * sizeof(float));
  float *d_b = device_copy(b, o * sizeof(float));
  float *d_y = device_poisoned((size_t) n * o);
  CHECK_CUDA(pp_cuda_rowdot(stream, d_h, n, d, ldh, d_w, d_b, o, act, d_y));
  float *y = host_result(d_y, (size_t) n * o);
  /* The reference reads H row by row with stride ldh. */
  float *hp = g_new(float, (size_t) n *d);
  for (uint32_t r = 0; r < n; r++)
    memcpy(hp + (size_t) r * d, h + (size_t) r * ldh, d * sizeof(float));
  double *ref = g_new(double, (size_t) n *o), *mag = g_new(double, (size_t) n *o);
  reference_linear(hp, n, d, w, b, o, act, ref, mag);
  g_autofree char *what = g_strdup_printf("rowdot %u×%u→%u (ldh %u) act%d", n, d, o, ldh, act.kind);
  expect_close(what, y, ref, mag, (size_t) n * o, true, PP_FP32_REL_TOL);
  g_free(h), g_free(w), g_free(b), g_free(y), g_free(hp), g_free(ref), g_free(mag);
  cudaFree(d_h), cudaFree(d_w), cudaFree(d_b), cudaFree(d_y);
}

static void
test_rowdot(void **state)
{
  (void) state;
  test_rng rng;
  test_rng_seed(&rng, seed + 2);
  check_rowdot(&rng, 1000, 300, 1, 300, RELU);
  check_rowdot(&rng, 1000, 300, 7, 300, RELU);
  check_rowdot(&rng, 999, 301, 7, 304, RELU);
  check_rowdot(&rng, 100, 64, 32, 64, RELU);
  for (int kind = 0; kind < PP_N_ACTS; kind++)
    check_rowdot(&rng, 333, 65, 3, 68, (pp_act){ (pp_act_kind) kind, 0.1f });
  if (!quick)
    check_rowdot(&rng, 1024, 1024, 1, 1024, RELU);
}

/* ---- element-wise --------------------------------------------------------------- */

static void
test_convert_and_bias_act(void **state)
{
  (void) state;
  test_rng rng;
  test_rng_seed(&rng, seed + 3);
  const struct {
    pp_layout_kind kind;
    pp_pixel_format format;
    uint32_t n, k, patch;
  } cases[] = {
    { PP_LAYOUT_ROWS, PP_PIXEL_GRAY8, 37, 64, 0 },
    { PP_LAYOUT_ROWS, PP_PIXEL_BGR, 20, 99, 0 },
    { PP_LAYOUT_PATCHES, PP_PIXEL_RGBA, 30, 0, 5 },
    { PP_LAYOUT_TENSOR, 0, 17, 33, 0 },
  };
  for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
    input in =
        make_input(&rng, cases[i].kind, cases[i].format, cases[i].n, cases[i].k, cases[i].patch);
    const size_t count = (size_t) in.layout.n * in.layout.k;
    float *d_x = device_poisoned(count);
    CHECK_CUDA(pp_cuda_convert(stream, &in.a, in.layout.n, in.layout.k, d_x, in.layout.k));
    float *x = host_result(d_x, count);
    assert_memory_equal(x, in.x, count * sizeof(float)); /* exactly x/255 */
    g_free(x);
    cudaFree(d_x);
    free_input(&in);
  }

  const uint32_t m = 33, n = 70, ldc = 72;
  float *c = g_new(float, (size_t) m *ldc), *bias = g_new(float, n);
  test_rng_fill_floats(&rng, c, (size_t) m * ldc, -1, 1);
  test_rng_fill_floats(&rng, bias, n, -1, 1);
  float *d_c = device_copy(c, (size_t) m * ldc * sizeof(float));
  float *d_bias = device_copy(bias, n * sizeof(float));
  for (int kind = 0; kind < PP_N_ACTS; kind++) {
    const pp_act act = { (pp_act_kind) kind, 0.1f };
    CHECK_CUDA(
        cudaMemcpyAsync(d_c, c, (size_t) m * ldc * sizeof(float), cudaMemcpyHostToDevice, stream));
    CHECK_CUDA(pp_cuda_bias_act(stream, d_c, m, n, ldc, d_bias, act));
    float *got = host_result(d_c, (size_t) m * ldc);
    for (uint32_t r = 0; r < m; r++)
      for (uint32_t col = 0; col < ldc; col++) {
        const float before = c[r * ldc + col];
        if (col >= n) { /* padding untouched */
          assert_float_equal(got[r * ldc + col], before, 0);
          continue;
        }
        /* erff/expf/tanhf on the GPU are within a few ulp of double. */
        const double want = test_activation(act, (double) before + bias[col]);
        if (fabs(got[r * ldc + col] - want) > 4e-7 * (1 + fabs(want)))
          fail_msg("bias_act act%d: %.9g, want %.9g", kind, got[r * ldc + col], want);
      }
    g_free(got);
  }
  g_free(c), g_free(bias);
  cudaFree(d_c), cudaFree(d_bias);
}

static void
test_launchers_check_shapes(void **state)
{
  (void) state;
  pp_cuda_a a = { .kind = PP_A_F32, .ld = 4 };
  _Alignas(16) float dummy[4] = { 0 }; /* dummy + 1 is not 16-byte aligned */
  assert_int_equal(pp_cuda_gemm(stream, &a, 4, 4, dummy, 2, NULL, 4, ID, dummy, 4, PP_TILE_128x128),
                   cudaErrorInvalidValue); /* ldw < pad4(n) */
  assert_int_equal(pp_cuda_gemm(NULL, &a, 4, 4, dummy, 4, NULL, 4, ID, dummy, 4, PP_TILE_128x128),
                   cudaErrorInvalidValue); /* the default stream is refused */
  assert_int_equal(pp_cuda_mlp_fused(stream, &a, 4, 4, dummy, 260, NULL, 257, ID, dummy, NULL, ID,
                                     dummy, PP_FUSED_D256),
                   cudaErrorInvalidValue); /* d > 256 */
  assert_int_equal(pp_cuda_rowdot(stream, dummy, 4, 4, 4, dummy, NULL, 33, ID, dummy),
                   cudaErrorInvalidValue); /* o > 32 */
  assert_int_equal(
      pp_cuda_mlp_small(stream, &a, 4, 4, dummy, 260, NULL, 257, ID, dummy, NULL, 1, ID, dummy, 1),
      cudaErrorInvalidValue); /* d > 256 */
  assert_int_equal(
      pp_cuda_mlp_small(stream, &a, 4, 4, dummy, 4, NULL, 4, ID, dummy, NULL, 33, ID, dummy, 1),
      cudaErrorInvalidValue); /* o > 32 */
  assert_int_equal(
      pp_cuda_mlp_small(stream, &a, 4, 4, dummy, 4, NULL, 4, ID, dummy, NULL, 1, ID, dummy, 3),
      cudaErrorInvalidValue); /* 3 rows a block */
  assert_int_equal(
      pp_cuda_mlp_small(stream, &a, 4, 4, dummy, 5, NULL, 4, ID, dummy, NULL, 1, ID, dummy, 1),
      cudaErrorInvalidValue); /* W0ᵀ rows not whole float4s */
  assert_int_equal(
      pp_cuda_mlp_small(stream, &a, 4, 4, dummy + 1, 4, NULL, 4, ID, dummy, NULL, 1, ID, dummy, 1),
      cudaErrorInvalidValue); /* W0ᵀ not 16-byte aligned */
  pp_cuda_a bytes = { .kind = PP_A_U8_GATHER };
  assert_int_equal(pp_cuda_convert(stream, &bytes, 4, 4, dummy, 4), cudaErrorInvalidValue);
  assert_int_equal(pp_cuda_fused_tile_for(300), PP_N_FUSED_TILES);
}

/* ---- cuBLAS paths ------------------------------------------------------------------ */

static void
check_lt(test_rng *rng, cublasLtHandle_t lt, uint32_t m, uint32_t k, uint32_t n, pp_act act,
         bool tf32)
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
  void *ws = device_copy(NULL, 32u << 20);
  pp_lt_gemm *g = NULL;
  assert_int_equal(pp_lt_gemm_plan(lt, m, k, n, k, ldc, d_b, act, tf32, 32u << 20, stream, d_x, d_w,
                                   d_c, ws, &g),
                   CUBLAS_STATUS_SUCCESS);
  CHECK_CUDA(cudaMemsetAsync(d_c, 0xFF, (size_t) m * ldc * sizeof(float), stream));
  assert_int_equal(pp_lt_gemm_run(g, stream, d_x, d_w, d_c, ws), CUBLAS_STATUS_SUCCESS);
  float *c = host_result(d_c, (size_t) m * ldc);
  float *packed = g_new(float, (size_t) m *n);
  for (uint32_t r = 0; r < m; r++)
    memcpy(packed + (size_t) r * n, c + (size_t) r * ldc, n * sizeof(float));
  double *ref = g_new(double, (size_t) m *n), *mag = g_new(double, (size_t) m *n);
  reference_linear(x, m, k, w, b, n, act, ref, mag);
  g_autofree char *what =
      g_strdup_printf("cublaslt %u×%u×%u act%d %s", m, k, n, act.kind, tf32 ? "tf32" : "fp32");
  expect_close(what, packed, ref, mag, (size_t) m * n, act.kind != PP_ACT_IDENTITY,
               tf32 ? TF32_REL_TOL : PP_FP32_REL_TOL);
  pp_lt_gemm_destroy(g);
  g_free(x), g_free(w), g_free(b), g_free(c), g_free(packed), g_free(ref), g_free(mag);
  cudaFree(d_x), cudaFree(d_w), cudaFree(d_b), cudaFree(d_c), cudaFree(ws);
}

static void
test_cublas_paths(void **state)
{
  (void) state;
  test_rng rng;
  test_rng_seed(&rng, seed + 4);
  cublasLtHandle_t lt;
  assert_int_equal(cublasLtCreate(&lt), CUBLAS_STATUS_SUCCESS);
  check_lt(&rng, lt, 1000, 777, 300, ID, false);
  check_lt(&rng, lt, 1000, 777, 7, RELU, false);
  check_lt(&rng, lt, 1000, 777, 300, ID, true);
  /* Activations without an epilogue of their own run after it. */
  check_lt(&rng, lt, 500, 99, 37, (pp_act){ PP_ACT_GELU, 0 }, false);
  check_lt(&rng, lt, 500, 99, 37, (pp_act){ PP_ACT_LEAKY_RELU, 0.1f }, false);
  cublasLtDestroy(lt);

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
    float *hs[2] = { device_poisoned((size_t) n * d), device_poisoned((size_t) n * d) };
    float *d_y = device_poisoned((size_t) n * o);
    assert_int_equal(
        pp_cublas_reference_mlp(blas, stream, &in.a, n, layers, m->n_layers, false, xs, hs, d_y),
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

/* ---- pitched device copies (frames in CUDA memory) ------------------------------ */

/* Random rows copied between pitches, against the host's own copy; bytes
 * outside the rows stay as they were (0xAB). Aligned (16-byte moves) and
 * odd shapes (byte moves). */
static void
test_copy_2d(void **state)
{
  (void) state;
  test_rng rng;
  test_rng_seed(&rng, 11);
  static const size_t shapes[][4] = {
    /* row bytes, rows, source pitch, destination pitch */
    { 1920, 1080, 2048, 1920 },
    { 1918, 541, 2048, 1920 },
    { 959, 270, 1024, 960 },
    { 16, 3, 48, 32 },
  };
  for (size_t i = 0; i < G_N_ELEMENTS(shapes); i++) {
    const size_t row = shapes[i][0], rows = shapes[i][1], sp = shapes[i][2], dp = shapes[i][3];
    uint8_t *src = g_malloc(sp * rows), *want = g_malloc(dp * rows), *got = g_malloc(dp * rows);
    test_rng_fill_bytes(&rng, src, sp * rows);
    memset(want, 0xAB, dp * rows);
    for (size_t r = 0; r < rows; r++)
      memcpy(want + r * dp, src + r * sp, row);
    void *d_src = device_copy(src, sp * rows);
    uint8_t *filler = g_malloc(dp * rows);
    memset(filler, 0xAB, dp * rows);
    void *d_dst = device_copy(filler, dp * rows);
    CHECK_CUDA(pp_cuda_copy_2d(stream, d_dst, dp, d_src, sp, row, rows));
    CHECK_CUDA(cudaMemcpyAsync(got, d_dst, dp * rows, cudaMemcpyDeviceToHost, stream));
    CHECK_CUDA(cudaStreamSynchronize(stream));
    assert_memory_equal(got, want, dp * rows);
    cudaFree(d_src);
    cudaFree(d_dst);
    g_free(src), g_free(want), g_free(got), g_free(filler);
  }
  assert_int_equal(pp_cuda_copy_2d(stream, (void *) 16, 8, (void *) 16, 16, 16, 1),
                   cudaErrorInvalidValue); /* pitch shorter than a row */
}

int
main(void)
{
  if (!test_cuda_usable())
    return 77;
  seed = test_seed();
  quick = g_getenv("PP_GPU_QUICK") != NULL;
  if (cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess)
    return 1;
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_copy_2d),
    cmocka_unit_test(test_gemm),
    cmocka_unit_test(test_gemm_activations),
    cmocka_unit_test(test_fused_mlp),
    cmocka_unit_test(test_small_mlp),
    cmocka_unit_test(test_rowdot),
    cmocka_unit_test(test_convert_and_bias_act),
    cmocka_unit_test(test_launchers_check_shapes),
    cmocka_unit_test(test_cublas_paths),
  };
  const int failed = cmocka_run_group_tests(tests, NULL, NULL);
  cudaStreamDestroy(stream);
  return failed;
}
