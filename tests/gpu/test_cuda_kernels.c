// SPDX-License-Identifier: LGPL-2.1-or-later
/* Every CUDA kernel against a float64 CPU reference on fresh random inputs,
 * its output poisoned with NaN first so an unwritten element fails, at
 * shapes that are multiples of no tile (N=1000, K=777, D=300, O=1 and 7) and
 * at the reference workloads' shapes.
 *
 * Bounds: ‖out − ref‖/‖ref‖ ≤ 1e-5 for FP32 without a final ReLU; with one,
 * the same norm over the magnitude of the sums (testutil.h); TF32 (cuBLASLt,
 * test_cuda_blas.c): ≤ 1e-3 (2.6e-4 measured on the H100), its 10-bit
 * mantissa rounding each input once (unit roundoff 4.9e-4).
 * Exits 77 without a CUDA device. PP_GPU_QUICK=1 (set under
 * compute-sanitizer) keeps only the small shapes. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cpu_mlp.h"
#include "kernel_check.h"
#include "weights.h"

static uint64_t seed;
static bool quick;

/* The model on the device as the module uploads it (weights.c). */
static pp_gpu_weights
upload_weights(const pp_model *m)
{
  pp_gpu_weights w = { 0 };
  char *msg = NULL;
  if (pp_gpu_weights_upload(&w, m, PP_DTYPE_F32, kc_stream, &msg) < 0)
    fail_msg("uploading the weights: %s", msg);
  return w;
}

static void
free_weights(const pp_gpu_weights *w)
{
  pp_gpu_weights copy = *w;
  pp_gpu_weights_free(&copy);
}

/* ---- GEMM ------------------------------------------------------------------ */

static void
check_gemm(test_rng *rng, const char *name, pp_layout_kind kind, pp_pixel_format format, uint32_t m,
           uint32_t k, uint32_t n, uint32_t patch, bool bias, pp_act act, pp_gemm_tile tile)
{
  input in = make_input(rng, kind, format, m, k, patch);
  m = in.layout.n;
  k = in.layout.k;
  /* One layer, fresh values, in the layouts the module uploads. */
  pp_model *model = NULL;
  assert_int_equal(pp_model_generate_layers(k, 1, &n, &act, &model), 0);
  float *w = model->layers[0].w;
  test_rng_fill_floats(rng, w, (size_t) n * k, -1, 1);
  test_rng_fill_floats(rng, model->layers[0].b, n, -1, 1);
  if (!bias)
    g_clear_pointer(&model->layers[0].b, g_free);
  const pp_gpu_weights gw = upload_weights(model);
  const pp_gpu_layer *l = &gw.layers[0];
  const uint32_t ldc = n + 3; /* a ragged ldc too */
  float *d_c = device_poisoned((size_t) m * ldc);
  CHECK_CUDA(pp_cuda_gemm(kc_stream, &in.a, m, k, l->wt, l->ldw, l->b, n, act, d_c, ldc, tile));
  float *c = host_result(d_c, (size_t) m * ldc);
  float *packed = g_new(float, (size_t) m *n);
  for (uint32_t r = 0; r < m; r++)
    memcpy(packed + (size_t) r * n, c + (size_t) r * ldc, n * sizeof(float));
  double *ref = g_new(double, (size_t) m *n), *mag = g_new(double, (size_t) m *n);
  reference_linear(in.x, m, k, w, model->layers[0].b, n, act, ref, mag);
  g_autofree char *what = g_strdup_printf("gemm %s %u×%u×%u %s act%d tile%d", name, m, k, n,
                                          bias ? "+bias" : "", act.kind, tile);
  expect_close(what, packed, ref, mag, (size_t) m * n, act.kind != PP_ACT_IDENTITY,
               PP_FP32_REL_TOL);
  g_free(c), g_free(packed), g_free(ref), g_free(mag);
  cudaFree(d_c);
  free_weights(&gw);
  pp_model_free(model);
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

/* mlp_small twice on the same frame with a done signal: each time the flag
 * in host memory holds that frame's sequence number once the stream is
 * done, and the block count is back at zero for the next. */
static void
check_small_signalled(const input *in, uint32_t n, uint32_t k, const float *d_w0t, uint32_t ldw,
                      const float *d_b0, uint32_t d, pp_act hidden, const float *d_w1,
                      const float *d_b1, uint32_t o, pp_act out, float *d_y, uint32_t rows)
{
  unsigned *flag = NULL, *d_flag = NULL, count = 1;
  CHECK_CUDA(cudaHostAlloc((void **) &flag, sizeof *flag, cudaHostAllocMapped));
  CHECK_CUDA(cudaHostGetDevicePointer((void **) &d_flag, flag, 0));
  *flag = 0;
  unsigned *d_count = device_copy(NULL, sizeof count);
  CHECK_CUDA(cudaMemsetAsync(d_count, 0, sizeof count, kc_stream));
  for (unsigned seq = 0x5eed0001u; seq <= 0x5eed0002u; seq++) {
    const pp_cuda_done_signal done = { d_count, d_flag, seq };
    CHECK_CUDA(pp_cuda_mlp_small(kc_stream, &in->a, n, k, d_w0t, ldw, d_b0, d, hidden, d_w1, d_b1,
                                 o, out, d_y, rows, &done));
    CHECK_CUDA(cudaMemcpyAsync(&count, d_count, sizeof count, cudaMemcpyDeviceToHost, kc_stream));
    CHECK_CUDA(cudaStreamSynchronize(kc_stream));
    assert_int_equal(*(volatile unsigned *) flag, seq);
    assert_int_equal(count, 0);
  }
  const pp_cuda_done_signal broken = { NULL, d_flag, 1 };
  assert_int_equal(pp_cuda_mlp_small(kc_stream, &in->a, n, k, d_w0t, ldw, d_b0, d, hidden, d_w1,
                                     d_b1, o, out, d_y, rows, &broken),
                   cudaErrorInvalidValue);
  cudaFree(d_count);
  cudaFreeHost(flag);
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
  const pp_gpu_weights gw = upload_weights(m);
  const pp_gpu_layer *l0 = &gw.layers[0], *l1 = &gw.layers[1];
  const float *d_w0t = l0->wt, *d_b0 = l0->b, *d_w1 = l1->w, *d_b1 = l1->b;
  const uint32_t ldw = l0->ldw;
  float *d_y = device_poisoned((size_t) n * o);
  if (rows == 0)
    CHECK_CUDA(pp_cuda_mlp_fused(kc_stream, &in.a, n, k, d_w0t, ldw, d_b0, d, hidden, d_w1, d_b1,
                                 out, d_y, pp_cuda_fused_tile_for(d)));
  else
    check_small_signalled(&in, n, k, d_w0t, ldw, d_b0, d, hidden, d_w1, d_b1, o, out, d_y, rows);
  float *y = host_result(d_y, (size_t) n * o);
  double *ref = g_new(double, (size_t) n *o), *mag = g_new(double, (size_t) n *o);
  test_reference_mlp(m, in.x, n, ref, mag);
  g_autofree char *what =
      g_strdup_printf("%s mlp %s %u×%u→%u→%u act%d, act%d (rows %u)", rows ? "small" : "fused",
                      name, n, k, d, o, hidden.kind, out.kind, rows);
  expect_close(what, y, ref, mag, (size_t) n * o, true, PP_FP32_REL_TOL);
  g_free(y), g_free(ref), g_free(mag);
  cudaFree(d_y);
  free_weights(&gw);
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

/* The chain kernel: an MLP of `n_layers` layers (widths `outs`, the last 1)
 * in one kernel on the tensor cores, against the float64 reference. Weights in ±1/√in so
 * activations stay of order one through every layer. */
static void
check_chain(test_rng *rng, const char *name, pp_layout_kind kind, pp_pixel_format format,
            uint32_t n, uint32_t k, uint32_t patch, unsigned n_layers, const uint32_t *outs,
            const pp_act *acts, bool bias)
{
  input in = make_input(rng, kind, format, n, k, patch);
  n = in.layout.n;
  k = in.layout.k;
  pp_model *m = random_layers(rng, k, n_layers, outs, acts, bias);
  assert_true(pp_cuda_mlp_chain_fits(n_layers, outs));
  const pp_gpu_weights gw = upload_weights(m);
  pp_cuda_chain_layer chain[PP_MAX_LAYERS];
  for (unsigned i = 0; i < n_layers; i++) {
    const pp_gpu_layer *l = &gw.layers[i];
    chain[i] = (pp_cuda_chain_layer){ l->w, l->wt, l->b, l->in, l->out, l->ldw, l->act };
  }
  double *ref = g_new(double, n), *mag = g_new(double, n);
  test_reference_mlp(m, in.x, n, ref, mag);
  /* Exact FP32 (TF32 pieces) and TF32 itself (1e-3, as cuBLASLt's TF32 in
   * test_cuda_blas.c). */
  for (int tf32 = 0; tf32 < 2; tf32++) {
    float *d_y = device_poisoned(n);
    CHECK_CUDA(pp_cuda_mlp_chain(kc_stream, &in.a, n, k, chain, n_layers, tf32, d_y));
    float *y = host_result(d_y, n);
    g_autofree char *what =
        g_strdup_printf("chain %s %u×%u, %u layers%s", name, n, k, n_layers, tf32 ? ", tf32" : "");
    expect_close(what, y, ref, mag, n, true, tf32 ? 1e-3 : PP_FP32_REL_TOL);
    g_free(y);
    cudaFree(d_y);
  }
  g_free(ref), g_free(mag);
  free_weights(&gw);
  pp_model_free(m);
  free_input(&in);
}

static void
test_chain_mlp(void **state)
{
  (void) state;
  test_rng rng;
  test_rng_seed(&rng, seed + 7);
  const pp_act R = RELU, G = { PP_ACT_GELU, 0 }, S = { PP_ACT_SILU, 0 }, T = { PP_ACT_TANH, 0 },
               L = { PP_ACT_LEAKY_RELU, 0.1f }, Sg = { PP_ACT_SIGMOID, 0 },
               Gt = { PP_ACT_GELU_TANH, 0 };
  /* narrow's shape on bytes, ReLU between, none at the end. */
  const uint32_t narrow[] = { 64, 64, 64, 64, 1 };
  const pp_act narrow_acts[] = { R, R, R, R, ID };
  check_chain(&rng, "narrow rgb patches", PP_LAYOUT_PATCHES, PP_PIXEL_RGB, 3000, 0, 8, 5, narrow,
              narrow_acts, true);
  /* Odd widths, no bias, every activation, floats in and rows of bytes. */
  const uint32_t odd[] = { 45, 7, 64, 1 };
  const pp_act odd_acts[] = { G, S, T, Sg };
  check_chain(&rng, "f32 odd widths", PP_LAYOUT_TENSOR, 0, 1000, 777, 0, 4, odd, odd_acts, false);
  const uint32_t three[] = { 33, 61, 1 };
  const pp_act three_acts[] = { L, Gt, R };
  check_chain(&rng, "gray8 rows", PP_LAYOUT_ROWS, PP_PIXEL_GRAY8, 333, 300, 0, 3, three, three_acts,
              true);
  const uint32_t eight[] = { 64, 3, 64, 17, 1, 64, 50, 1 };
  const pp_act eight_acts[] = { ID, R, G, S, T, L, Sg, ID };
  check_chain(&rng, "bgra rows, eight layers", PP_LAYOUT_ROWS, PP_PIXEL_BGRA, 257, 100, 0, 8, eight,
              eight_acts, true);
  /* What does not fit: a hidden layer of 65, two outputs, two layers. */
  const uint32_t wide[] = { 65, 8, 1 }, two_out[] = { 8, 8, 2 }, two[] = { 8, 1 };
  assert_false(pp_cuda_mlp_chain_fits(3, wide));
  assert_false(pp_cuda_mlp_chain_fits(3, two_out));
  assert_false(pp_cuda_mlp_chain_fits(2, two));
  if (quick)
    return;
  check_chain(&rng, "narrow hd", PP_LAYOUT_PATCHES, PP_PIXEL_RGB, 32400, 0, 8, 5, narrow,
              narrow_acts, true);
}

/* mlp_small on every rows-per-block choice and hidden width class, with
 * ragged row counts (not a multiple of the rows per block), K past one
 * 256-input pass, several outputs, and every way of reading X; each with
 * its done signal. */
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
  CHECK_CUDA(pp_cuda_rowdot(kc_stream, d_h, PP_DTYPE_F32, n, d, ldh, d_w, d_b, o, act, d_y));
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

static void check_bias_act(test_rng *rng, uint32_t m, uint32_t n, uint32_t ldc);

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
    CHECK_CUDA(pp_cuda_convert(kc_stream, &in.a, in.layout.n, in.layout.k, d_x, in.layout.k,
                               PP_DTYPE_F32));
    float *x = host_result(d_x, count);
    assert_memory_equal(x, in.x, count * sizeof(float)); /* exactly x/255 */
    g_free(x);
    /* In 16 bits: each value rounded once. */
    for (pp_dtype t = PP_DTYPE_BF16; t <= PP_DTYPE_F16; t++) {
      CHECK_CUDA(pp_cuda_convert(kc_stream, &in.a, in.layout.n, in.layout.k, d_x, in.layout.k, t));
      float *x16 = host_halves(d_x, count, t);
      for (size_t j = 0; j < count; j++)
        if (x16[j] != pp_dtype_round(t, in.x[j]))
          fail_msg("convert to %s: [%zu] %.9g, want %.9g", pp_dtype_name(t), j, x16[j],
                   pp_dtype_round(t, in.x[j]));
      g_free(x16);
    }
    cudaFree(d_x);
    free_input(&in);
  }
  for (uint32_t n = 70; n <= 72; n += 2) /* one element a thread, and 16-byte vectors */
    check_bias_act(&rng, 33, n, 72);
}

/* bias_act on m rows of n (row stride ldc): floats, and each 16-bit type
 * against the host's act(x + bias) rounded to it. */
static void
check_bias_act(test_rng *rng, uint32_t m, uint32_t n, uint32_t ldc)
{
  float *c = g_new(float, (size_t) m *ldc), *bias = g_new(float, n);
  test_rng_fill_floats(rng, c, (size_t) m * ldc, -1, 1);
  test_rng_fill_floats(rng, bias, n, -1, 1);
  float *d_c = device_copy(c, (size_t) m * ldc * sizeof(float));
  float *d_bias = device_copy(bias, n * sizeof(float));
  void *d_h = device_copy(NULL, (size_t) m * ldc * 2);
  for (int kind = 0; kind < PP_N_ACTS; kind++) {
    const pp_act act = { (pp_act_kind) kind, 0.1f };
    for (pp_dtype t = PP_DTYPE_BF16; t <= PP_DTYPE_F16; t++) {
      CHECK_CUDA(pp_cuda_cast(kc_stream, d_c, (size_t) m * ldc, t, false, d_h));
      CHECK_CUDA(pp_cuda_bias_act(kc_stream, d_h, t, m, n, ldc, d_bias, act));
      float *got = host_halves(d_h, (size_t) m * ldc, t);
      for (uint32_t r = 0; r < m; r++)
        for (uint32_t col = 0; col < ldc; col++) {
          const float x = pp_dtype_round(t, c[r * ldc + col]);
          const float want = col < n ? pp_dtype_round(t, pp_act_apply(act, x + bias[col])) : x;
          /* The GPU's erff/expf/tanhf may differ from the host's in the
           * last float bit, which can move a rounding by one step. */
          if (fabsf(got[r * ldc + col] - want) > ldexpf(fabsf(want) + 1e-30f, -7))
            fail_msg("bias_act %s act%d [%u,%u]: %.9g, want %.9g", pp_dtype_name(t), kind, r, col,
                     got[r * ldc + col], want);
        }
      g_free(got);
    }
  }
  cudaFree(d_h);
  for (int kind = 0; kind < PP_N_ACTS; kind++) {
    const pp_act act = { (pp_act_kind) kind, 0.1f };
    CHECK_CUDA(cudaMemcpyAsync(d_c, c, (size_t) m * ldc * sizeof(float), cudaMemcpyHostToDevice,
                               kc_stream));
    CHECK_CUDA(pp_cuda_bias_act(kc_stream, d_c, PP_DTYPE_F32, m, n, ldc, d_bias, act));
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
  assert_int_equal(
      pp_cuda_gemm(kc_stream, &a, 4, 4, dummy, 2, NULL, 4, ID, dummy, 4, PP_TILE_128x128),
      cudaErrorInvalidValue); /* ldw < pad4(n) */
  assert_int_equal(pp_cuda_gemm(NULL, &a, 4, 4, dummy, 4, NULL, 4, ID, dummy, 4, PP_TILE_128x128),
                   cudaErrorInvalidValue); /* the default stream is refused */
  assert_int_equal(pp_cuda_mlp_fused(kc_stream, &a, 4, 4, dummy, 260, NULL, 257, ID, dummy, NULL,
                                     ID, dummy, PP_FUSED_D256),
                   cudaErrorInvalidValue); /* d > 256 */
  assert_int_equal(
      pp_cuda_rowdot(kc_stream, dummy, PP_DTYPE_F32, 4, 4, 4, dummy, NULL, 33, ID, dummy),
      cudaErrorInvalidValue); /* o > 32 */
  const pp_cuda_chain_layer chain[3] = { { NULL, dummy, NULL, 4, 8, 8, ID },
                                         { dummy, NULL, NULL, 8, 8, 0, ID },
                                         { dummy, NULL, NULL, 8, 1, 0, ID } };
  assert_int_equal(pp_cuda_mlp_chain(NULL, &a, 4, 4, chain, 3, false, dummy),
                   cudaErrorInvalidValue); /* the default stream is refused */
  assert_int_equal(pp_cuda_mlp_chain(kc_stream, &a, 4, 4, chain, 2, false, dummy),
                   cudaErrorInvalidValue); /* two layers: the two-layer kernels' */
  pp_cuda_chain_layer unchained[3] = { chain[0], chain[1], chain[2] };
  unchained[2].in = 7;
  assert_int_equal(pp_cuda_mlp_chain(kc_stream, &a, 4, 4, unchained, 3, false, dummy),
                   cudaErrorInvalidValue); /* layer 2 does not take layer 1's 8 */
  assert_int_equal(pp_cuda_mlp_small(kc_stream, &a, 4, 4, dummy, 260, NULL, 257, ID, dummy, NULL, 1,
                                     ID, dummy, 1, NULL),
                   cudaErrorInvalidValue); /* d > 256 */
  assert_int_equal(pp_cuda_mlp_small(kc_stream, &a, 4, 4, dummy, 4, NULL, 4, ID, dummy, NULL, 33,
                                     ID, dummy, 1, NULL),
                   cudaErrorInvalidValue); /* o > 32 */
  assert_int_equal(pp_cuda_mlp_small(kc_stream, &a, 4, 4, dummy, 4, NULL, 4, ID, dummy, NULL, 1, ID,
                                     dummy, 3, NULL),
                   cudaErrorInvalidValue); /* 3 rows a block */
  assert_int_equal(pp_cuda_mlp_small(kc_stream, &a, 4, 4, dummy, 5, NULL, 4, ID, dummy, NULL, 1, ID,
                                     dummy, 1, NULL),
                   cudaErrorInvalidValue); /* W0ᵀ rows not whole float4s */
  assert_int_equal(pp_cuda_mlp_small(kc_stream, &a, 4, 4, dummy + 1, 4, NULL, 4, ID, dummy, NULL, 1,
                                     ID, dummy, 1, NULL),
                   cudaErrorInvalidValue); /* W0ᵀ not 16-byte aligned */
  pp_cuda_a bytes = { .kind = PP_A_U8_GATHER };
  assert_int_equal(pp_cuda_convert(kc_stream, &bytes, 4, 4, dummy, 4, PP_DTYPE_F32),
                   cudaErrorInvalidValue);
  assert_int_equal(pp_cuda_fused_tile_for(300), PP_N_FUSED_TILES);
}

/* ---- 16-bit types ------------------------------------------------------------- */

/* The GPU's rounding (pp_cuda_cast) is the host's (pp_dtype_round) bit for
 * bit, on values over every exponent each type has and past it (ties,
 * subnormals, overflow, NaN), so the CPU backend computes what the GPU
 * stores. */
static void
test_cast_matches_host(void **state)
{
  (void) state;
  test_rng rng;
  test_rng_seed(&rng, seed);
  enum { N = 1 << 16 };
  float *v = g_new(float, N);
  for (size_t i = 0; i < N; i++) {
    const double mantissa = test_rng_uniform(&rng, 1, 2);
    const int e = (int) test_rng_uniform(&rng, -140, 130);
    v[i] = (float) ldexp(i % 2 ? -mantissa : mantissa, e);
  }
  /* Exact ties of both types, and the edges the unit test names. */
  for (size_t i = 0; i < 512; i++) /* float16's ties, then bfloat16's */
    v[i] = ldexpf(1.0f + (2 * (float) i + 1) * 0x1p-11f, (int) (i % 40) - 20);
  for (size_t i = 512; i < 1024; i++)
    v[i] = ldexpf(1.0f + (2 * (float) (i % 64) + 1) * 0x1p-8f, (int) (i % 40) - 20);
  const float edges[] = { 65504.0f, 65519.0f, 65520.0f, 0x1p-25f, 3 * 0x1p-25f, 0x1p-14f,
                          -0.0f,    NAN,      INFINITY, 3.4e38f,  0x1p-133f,    3 * 0x1p-134f };
  memcpy(v + 1024, edges, sizeof edges);
  float *d_v = device_copy(v, N * sizeof(float));
  float *d_r = device_poisoned(N);
  for (pp_dtype t = PP_DTYPE_BF16; t <= PP_DTYPE_F16; t++) {
    CHECK_CUDA(pp_cuda_cast(kc_stream, d_v, N, t, true, d_r));
    float *r = host_result(d_r, N);
    for (size_t i = 0; i < N; i++) {
      const float want = pp_dtype_round(t, v[i]);
      if (memcmp(&want, &r[i], sizeof want) != 0 && !(isnan(want) && isnan(r[i])))
        fail_msg("%s(%.9g): GPU %.9g, host %.9g", pp_dtype_name(t), v[i], r[i], want);
    }
    g_free(r);
  }
  cudaFree(d_v), cudaFree(d_r);
  g_free(v);
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
    CHECK_CUDA(pp_cuda_copy_2d(kc_stream, d_dst, dp, d_src, sp, row, rows));
    CHECK_CUDA(cudaMemcpyAsync(got, d_dst, dp * rows, cudaMemcpyDeviceToHost, kc_stream));
    CHECK_CUDA(cudaStreamSynchronize(kc_stream));
    assert_memory_equal(got, want, dp * rows);
    cudaFree(d_src);
    cudaFree(d_dst);
    g_free(src), g_free(want), g_free(got), g_free(filler);
  }
  assert_int_equal(pp_cuda_copy_2d(kc_stream, (void *) 16, 8, (void *) 16, 16, 16, 1),
                   cudaErrorInvalidValue); /* pitch shorter than a row */
}

int
main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_copy_2d),
    cmocka_unit_test(test_cast_matches_host),
    cmocka_unit_test(test_gemm),
    cmocka_unit_test(test_gemm_activations),
    cmocka_unit_test(test_fused_mlp),
    cmocka_unit_test(test_chain_mlp),
    cmocka_unit_test(test_small_mlp),
    cmocka_unit_test(test_rowdot),
    cmocka_unit_test(test_convert_and_bias_act),
    cmocka_unit_test(test_launchers_check_shapes),
  };
  return kc_main("cuda-kernels", tests, G_N_ELEMENTS(tests), &seed, &quick);
}
