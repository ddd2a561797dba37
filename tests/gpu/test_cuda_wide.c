// SPDX-License-Identifier: LGPL-2.1-or-later
/* The wide kernel (an MLP in one launch at bf16, fp16, tf32 or exact fp32,
 * mlp_wide.cu) and, where the hidden layers are at most 64 wide, the warp
 * kernel (mlp_warp.cu, the same precisions), their weights uploaded
 * (weights.c) and packed (pp_cuda_wide_pack, pp_cuda_warp_pack) as the
 * executor does, at odd widths, 2 to 8 layers, every activation, with and
 * without bias, floats, bytes in rows and in patches (centred too), against two float64
 * references:
 *
 * - the model itself: within the precision's scaled bound (testutil.h);
 * - the model rounded where the kernel rounds (at 16 bits X, weights,
 *   biases, each hidden layer's activations; at tf32 X, the hidden
 *   layers' weights and every activation; in double between): only the order of the FP32 sums differs, so the
 *   kernel stays within PP_SAME_PRECISION_RATIO of that reference's own
 *   distance from the first. A kernel that skipped a rounding, or read a
 *   weight from the wrong place, is about the whole distance off or more.
 *   (Exact fp32 rounds nowhere: the first reference is its own.)
 *
 * And the warp kernel against the wide kernel: at 16 bits their hidden
 * layers are the same sums rounded alike, so only the last layer's FP32
 * sums differ in order; in exact fp32 both round nowhere
 * (PP_WARP_WIDE_TOL). In tf32 their sums differ in order before each
 * rounding to TF32, which may then differ by a TF32 place: each is held to
 * its rounding instead, which bounds their distance.
 *
 * And exact FP32 on several streams at once, against a watchdog and one
 * launch's bits.
 *
 * Exits 77 without a CUDA device; PP_GPU_QUICK=1 keeps the small shapes. */
#include <math.h>
#include <string.h>

#include "kernel_check.h"
#include "weights.h"

/* Relative to the scores' magnitude: FP32 sums of at most 64 products in
 * another order, a few ulps apart. */
#define PP_WARP_WIDE_TOL 1e-5

static uint64_t seed;
static bool quick;

static const pp_act ID = { PP_ACT_IDENTITY, 0 }, R = { PP_ACT_RELU, 0 }, G = { PP_ACT_GELU, 0 },
                    S = { PP_ACT_SILU, 0 }, T = { PP_ACT_TANH, 0 }, L = { PP_ACT_LEAKY_RELU, 0.1f },
                    Sg = { PP_ACT_SIGMOID, 0 }, Gt = { PP_ACT_GELU_TANH, 0 };

/* v as the kernel at precision p stores it for the next layer. */
static float
product_input(pp_precision p, float v)
{
  switch (p) {
    case PP_PRECISION_TF32:
      return pp_round_tf32(v);
    case PP_PRECISION_FP32:
      return v;
    default:
      return pp_dtype_round(pp_precision_dtype(p), v);
  }
}

/* The model at `p` as the kernel computes it, in double between the
 * roundings. At 16 bits every weight and bias is rounded, and each hidden
 * layer's sum with its bias, then the activation of that; at tf32 X, the
 * hidden layers' weights and each activation (the last layer's weights
 * and every bias are floats); at fp32 nothing. */
static void
reference_rounded(const pp_model *m, const float *x, uint32_t n, pp_precision p, double *out)
{
  const bool floats = pp_precision_dtype(p) == PP_DTYPE_F32;
  const pp_dtype t = pp_precision_dtype(p);
  uint32_t widest = m->layers[0].in;
  float *w[PP_MAX_LAYERS], *b[PP_MAX_LAYERS];
  for (unsigned i = 0; i < m->n_layers; i++) {
    const pp_layer *l = &m->layers[i];
    const bool last = i + 1 == m->n_layers;
    widest = MAX(widest, l->out);
    w[i] = g_new(float, (size_t) l->out * l->in);
    b[i] = g_new0(float, l->out);
    for (size_t j = 0; j < (size_t) l->out * l->in; j++)
      w[i][j] = floats && last ? l->w[j] : product_input(p, l->w[j]);
    for (uint32_t o = 0; l->b && o < l->out; o++)
      b[i][o] = floats ? l->b[o] : pp_dtype_round(t, l->b[o]);
  }
  double *a = g_new(double, widest), *h = g_new(double, widest);
  for (uint32_t r = 0; r < n; r++) {
    for (uint32_t j = 0; j < m->layers[0].in; j++)
      a[j] = x[(size_t) r * m->layers[0].in + j];
    for (unsigned li = 0; li < m->n_layers; li++) {
      const pp_layer *l = &m->layers[li];
      const bool last = li + 1 == m->n_layers;
      for (uint32_t j = 0; j < l->in; j++)
        a[j] = product_input(p, (float) a[j]);
      for (uint32_t o = 0; o < l->out; o++) {
        const float *wo = w[li] + (size_t) o * l->in;
        double s = b[li][o];
        for (uint32_t j = 0; j < l->in; j++)
          s += (double) wo[j] * a[j];
        h[o] = last     ? pp_act_apply(l->act, (float) s)
               : floats ? pp_act_apply(l->act, (float) s)
                        : pp_dtype_round(t, pp_act_apply(l->act, pp_dtype_round(t, (float) s)));
      }
      memcpy(a, h, l->out * sizeof(double));
    }
    out[r] = a[0];
  }
  for (unsigned i = 0; i < m->n_layers; i++)
    g_free(w[i]), g_free(b[i]);
  g_free(a), g_free(h);
}

static int
smem_limit(void)
{
  int device = 0, limit = 0;
  CHECK_CUDA(cudaGetDevice(&device));
  CHECK_CUDA(cudaDeviceGetAttribute(&limit, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  return limit;
}

/* m's weights at p uploaded into *gw and packed as the executor does for
 * the wide kernel, or the warp kernel where `warp`: the blob (device
 * memory), `packed` its layers as the kernel reads them. */
static void *
pack_model(const pp_model *m, pp_precision p, pp_gpu_weights *gw, pp_cuda_wide_layer *packed,
           bool warp)
{
  const pp_dtype t = pp_precision_dtype(p);
  const unsigned n_layers = m->n_layers;
  char *msg = NULL;
  if (pp_gpu_weights_upload(gw, m, t, kc_stream, &msg) < 0)
    fail_msg("uploading the weights: %s", msg);
  pp_cuda_wide_layer layers[PP_MAX_WIDE];
  for (unsigned i = 0; i < n_layers; i++) {
    const pp_gpu_layer *l = &gw->layers[i];
    const bool w_floats = i + 1 == n_layers || t == PP_DTYPE_F32;
    layers[i] = (pp_cuda_wide_layer){ w_floats ? (const void *) l->w : l->w16, l->b, l->in, l->out,
                                      l->act };
  }
  const bool tf32 = p == PP_PRECISION_TF32;
  if (warp) {
    void *blob = device_copy(NULL, pp_cuda_warp_packed_bytes(t, tf32, layers, n_layers));
    CHECK_CUDA(pp_cuda_warp_pack(kc_stream, t, tf32, layers, n_layers, blob, packed));
    return blob;
  }
  void *blob = device_copy(NULL, pp_cuda_wide_packed_bytes(t, tf32, layers, n_layers));
  CHECK_CUDA(pp_cuda_wide_pack(kc_stream, t, tf32, layers, n_layers, blob, packed));
  return blob;
}

/* The wide kernel's (or the warp kernel's, where `warp`) n results of `m`
 * at `t` on the device's X `a`, its weights uploaded and packed as the
 * executor does. */
static float *
packed_result(const pp_model *m, pp_precision p, const pp_cuda_a *a, uint32_t n, uint32_t k,
              bool warp)
{
  const pp_dtype t = pp_precision_dtype(p);
  pp_gpu_weights gw = { 0 };
  pp_cuda_wide_layer packed[PP_MAX_WIDE];
  void *blob = pack_model(m, p, &gw, packed, warp);
  float *d_y = device_poisoned(n);
  const bool tf32 = p == PP_PRECISION_TF32;
  CHECK_CUDA(warp ? pp_cuda_mlp_warp(kc_stream, a, n, k, packed, m->n_layers, t, tf32, d_y)
                  : pp_cuda_mlp_wide(kc_stream, a, n, k, packed, m->n_layers, t, tf32, d_y));
  float *y = host_result(d_y, n);
  cudaFree(d_y);
  cudaFree(blob);
  pp_gpu_weights_free(&gw);
  return y;
}

/* Bytes read as byte·scale + bias rather than as they were made (no
 * bias), X's floats as the reader gives them. */
static void
reread_bytes(input *in, float scale, float bias)
{
  const float was = in->layout.scale;
  for (size_t i = 0; i < (size_t) in->layout.n * in->layout.k; i++)
    in->x[i] = fmaf((float) lrintf(in->x[i] / was), scale, bias);
  in->layout.scale = in->a.scale = scale;
  in->layout.bias = in->a.bias = bias;
}

/* The wide kernel's (and the warp kernel's, where it takes the model)
 * results of a random model of these widths on `src` at every precision,
 * against float64 and the model rounded where the kernel rounds. */
static void
check_input(test_rng *rng, const char *name, const input *src, unsigned n_layers,
            const uint32_t *outs, const pp_act *acts, bool bias)
{
  const input in = *src;
  const uint32_t n = in.layout.n, k = in.layout.k;
  pp_model *m = random_layers(rng, k, n_layers, outs, acts, bias);
  double *ref = g_new(double, n), *mag = g_new(double, n), *rounded = g_new(double, n);
  test_reference_mlp(m, in.x, n, ref, mag);
  static const pp_precision precisions[] = { PP_PRECISION_BF16, PP_PRECISION_FP16,
                                             PP_PRECISION_TF32, PP_PRECISION_FP32 };
  for (size_t pi = 0; pi < G_N_ELEMENTS(precisions); pi++) {
    const pp_precision p = precisions[pi];
    const pp_dtype t = pp_precision_dtype(p);
    const size_t smem = pp_cuda_mlp_wide_smem(t, k, n_layers, outs);
    assert_true(smem > 0 && smem <= (size_t) smem_limit());
    const size_t warp_smem = pp_cuda_mlp_warp_smem(t, k, n_layers, outs);
    bool narrow = true;
    for (unsigned i = 0; i + 1 < n_layers; i++)
      narrow = narrow && outs[i] <= PP_WARP_MAX_D;
    assert_int_equal(warp_smem > 0, narrow);
    reference_rounded(m, in.x, n, p, rounded);
    float *rounded_f = g_new(float, n);
    for (uint32_t i = 0; i < n; i++)
      rounded_f[i] = (float) rounded[i];
    const double own = test_scaled_error(rounded_f, ref, mag, n);
    float *wide = NULL;
    /* Floats of a wide K leave the warp kernel no room (gray8's 300). */
    const bool warp_fits = warp_smem > 0 && warp_smem <= (size_t) smem_limit();
    for (int warp = 0; warp < (warp_fits ? 2 : 1); warp++) {
      float *y = packed_result(m, p, &in.a, n, k, warp);
      g_autofree char *what =
          g_strdup_printf("%s %s %u×%u, %u layers%s, %s", warp ? "warp" : "wide", name, n, k,
                          n_layers, bias ? "" : ", no bias", pp_precision_name(p));
      expect_close(what, y, ref, mag, n, true, test_precision_tol(p));
      g_autofree char *alike = g_strdup_printf("%s, against its rounding", what);
      expect_close(alike, y, rounded, mag, n, true, PP_SAME_PRECISION_RATIO * own + 1e-7);
      if (warp && p != PP_PRECISION_TF32) {
        double *wide_d = g_new(double, n);
        for (uint32_t i = 0; i < n; i++)
          wide_d[i] = wide[i];
        g_autofree char *against = g_strdup_printf("%s, against the wide kernel", what);
        expect_close(against, y, wide_d, mag, n, true, PP_WARP_WIDE_TOL);
        g_free(wide_d);
        g_free(y);
      } else if (warp) {
        g_free(y);
      } else {
        wide = y;
      }
    }
    g_free(wide);
    g_free(rounded_f);
  }
  g_free(ref), g_free(mag), g_free(rounded);
  pp_model_free(m);
}

static void
check_wide(test_rng *rng, const char *name, pp_layout_kind kind, pp_pixel_format format, uint32_t n,
           uint32_t k, uint32_t patch, unsigned n_layers, const uint32_t *outs, const pp_act *acts,
           bool bias)
{
  input in = make_input(rng, kind, format, n, k, patch);
  check_input(rng, name, &in, n_layers, outs, acts, bias);
  free_input(&in);
}

static void
test_wide_mlp(void **state)
{
  (void) state;
  test_rng rng;
  test_rng_seed(&rng, seed + 11);
  /* deep's shape: 8×8 RGB patches, 512 GELU, 256 GELU, 64 SiLU, 1. */
  const uint32_t deep[] = { 512, 256, 64, 1 };
  const pp_act deep_acts[] = { G, G, S, ID };
  check_wide(&rng, "deep rgb patches", PP_LAYOUT_PATCHES, PP_PIXEL_RGB, 3000, 0, 8, 4, deep,
             deep_acts, true);
  /* The same on bytes centred by the reader's bias, which exact FP32 adds
   * after the first layer's products of the bytes themselves. */
  input centred = make_input(&rng, PP_LAYOUT_PATCHES, PP_PIXEL_RGB, 3000, 0, 8);
  reread_bytes(&centred, centred.layout.scale, -0.5f);
  check_input(&rng, "deep rgb patches, centred", &centred, 4, deep, deep_acts, true);
  free_input(&centred);
  /* Bytes at a scale below 2^-10, whose values TF32 does not take into
   * FP16 (a step of 2^-12 would lose bits there): its first layer runs on
   * the TF32 tiles, exact FP32's on the bytes as ever. */
  input faint = make_input(&rng, PP_LAYOUT_PATCHES, PP_PIXEL_RGB, 3000, 0, 8);
  reread_bytes(&faint, 0x1p-12f, 0.25f);
  check_input(&rng, "deep rgb patches, faint", &faint, 4, deep, deep_acts, true);
  free_input(&faint);
  /* Odd widths, no bias, floats of an odd K. */
  const uint32_t odd[] = { 45, 300, 7, 1 };
  const pp_act odd_acts[] = { T, L, Sg, Gt };
  check_wide(&rng, "f32 odd widths", PP_LAYOUT_TENSOR, 0, 1000, 301, 0, 4, odd, odd_acts, false);
  /* Two layers, the widest hidden layer, rows of bytes. */
  const uint32_t two[] = { 512, 1 };
  const pp_act two_acts[] = { R, ID };
  check_wide(&rng, "gray8 rows", PP_LAYOUT_ROWS, PP_PIXEL_GRAY8, 333, 200, 0, 2, two, two_acts,
             true);
  const uint32_t eight[] = { 64, 3, 129, 17, 1, 64, 50, 1 };
  const pp_act eight_acts[] = { ID, R, G, S, T, L, Sg, ID };
  check_wide(&rng, "bgra rows, eight layers", PP_LAYOUT_ROWS, PP_PIXEL_BGRA, 257, 100, 0, 8, eight,
             eight_acts, true);
  /* Layers written over their inputs (TF32 on warpgroups, where taking
   * turns in the buffers would leave room for two weight tiles only):
   * 250 and 150 wide, the last column tile of the second half empty. */
  const uint32_t over[] = { 512, 250, 150, 1 };
  const pp_act over_acts[] = { Gt, S, G, ID };
  check_wide(&rng, "f32 layers over their inputs", PP_LAYOUT_TENSOR, 0, 1000, 191, 0, 4, over,
             over_acts, false);
  /* Hidden layers at most 64 wide, which the warp kernel takes too:
   * narrow's shape; odd widths, no bias, floats of an odd K; two layers;
   * eight. */
  const uint32_t narrow[] = { 64, 64, 64, 64, 1 };
  const pp_act narrow_acts[] = { R, R, R, R, ID };
  check_wide(&rng, "narrow rgb patches", PP_LAYOUT_PATCHES, PP_PIXEL_RGB, 3000, 0, 8, 5, narrow,
             narrow_acts, true);
  const uint32_t odd_narrow[] = { 45, 7, 64, 33, 1 };
  const pp_act odd_narrow_acts[] = { G, S, T, Gt, Sg };
  check_wide(&rng, "f32 odd narrow widths", PP_LAYOUT_TENSOR, 0, 1001, 77, 0, 5, odd_narrow,
             odd_narrow_acts, false);
  const uint32_t two_narrow[] = { 17, 1 };
  const pp_act two_narrow_acts[] = { L, ID };
  check_wide(&rng, "gray8 rows, two narrow layers", PP_LAYOUT_ROWS, PP_PIXEL_GRAY8, 129, 300, 0, 2,
             two_narrow, two_narrow_acts, true);
  const uint32_t eight_narrow[] = { 64, 3, 29, 17, 1, 64, 50, 1 };
  check_wide(&rng, "bgra rows, eight narrow layers", PP_LAYOUT_ROWS, PP_PIXEL_BGRA, 257, 100, 0, 8,
             eight_narrow, eight_acts, true);
  /* What does not fit either kernel: past its widest hidden layer (513
   * wide, 65 for the warp kernel), two outputs, one layer, nine layers, a
   * K whose rows leave no room. */
  const uint32_t too_wide[] = { 513, 1 }, sixty_five[] = { 64, 65, 1 }, two_out[] = { 8, 2 },
                 nine[] = { 8, 8, 8, 8, 8, 8, 8, 8, 1 };
  const struct {
    size_t (*smem)(pp_dtype, uint32_t, unsigned, const uint32_t *);
    const uint32_t *past;
    unsigned past_layers;
  } kernels[] = { { pp_cuda_mlp_wide_smem, too_wide, 2 },
                  { pp_cuda_mlp_warp_smem, sixty_five, 3 } };
  for (size_t i = 0; i < G_N_ELEMENTS(kernels); i++) {
    assert_int_equal(kernels[i].smem(PP_DTYPE_BF16, 192, kernels[i].past_layers, kernels[i].past),
                     0);
    assert_int_equal(kernels[i].smem(PP_DTYPE_BF16, 192, 2, two_out), 0);
    assert_int_equal(kernels[i].smem(PP_DTYPE_BF16, 192, 1, two_out + 1), 0);
    assert_int_equal(kernels[i].smem(PP_DTYPE_F16, 192, 9, nine), 0);
    assert_true(kernels[i].smem(PP_DTYPE_BF16, 4096, 2, two_narrow) > (size_t) smem_limit());
  }
  /* The warp kernel's floats take twice the room of 16 bits, and
   * narrow's fit. */
  const size_t narrow_f32 = pp_cuda_mlp_warp_smem(PP_DTYPE_F32, 192, 5, narrow);
  assert_int_equal(narrow_f32, 2 * pp_cuda_mlp_warp_smem(PP_DTYPE_BF16, 192, 5, narrow));
  assert_true(narrow_f32 <= (size_t) smem_limit());
  if (quick)
    return;
  check_wide(&rng, "deep hd", PP_LAYOUT_PATCHES, PP_PIXEL_RGB, 32400, 0, 8, 4, deep, deep_acts,
             true);
  check_wide(&rng, "narrow hd", PP_LAYOUT_PATCHES, PP_PIXEL_RGB, 32400, 0, 8, 5, narrow,
             narrow_acts, true);
}

/* Exact FP32 launched again and again on four streams at once, as a
 * pipeline's slots launch it, deep's shape and hd's: every launch ends
 * within a minute, and each stream's last results are the bits of one
 * launch alone. Its ring's copies land in any order under such load; a
 * warpgroup that waited on the wrong fill would take the other's part
 * and stall the ring (dev/ring-model.py). */
static void
test_wide_exact_on_streams(void **state)
{
  (void) state;
  /* Under a sanitizer (PP_GPU_QUICK) a launch of the ring takes seconds. */
  enum { STREAMS = 4 };
  const int launches = quick ? 4 : 100;
  test_rng rng;
  test_rng_seed(&rng, seed + 13);
  const uint32_t deep[] = { 512, 256, 64, 1 }, hd[] = { 256, 1 };
  const pp_act deep_acts[] = { G, G, S, ID }, hd_acts[] = { R, ID };
  const struct {
    const uint32_t *outs;
    const pp_act *acts;
    unsigned n_layers;
  } shapes[] = { { deep, deep_acts, 4 }, { hd, hd_acts, 2 } };
  for (size_t si = 0; si < G_N_ELEMENTS(shapes); si++) {
    input in = make_input(&rng, PP_LAYOUT_PATCHES, PP_PIXEL_RGB, quick ? 3000 : 32400, 0, 8);
    const uint32_t n = in.layout.n, k = in.layout.k;
    const unsigned n_layers = shapes[si].n_layers;
    pp_model *m = random_layers(&rng, k, n_layers, shapes[si].outs, shapes[si].acts, true);
    pp_gpu_weights gw = { 0 };
    pp_cuda_wide_layer packed[PP_MAX_WIDE];
    void *blob = pack_model(m, PP_PRECISION_FP32, &gw, packed, false);
    float *d_once = device_poisoned(n);
    CHECK_CUDA(
        pp_cuda_mlp_wide(kc_stream, &in.a, n, k, packed, n_layers, PP_DTYPE_F32, false, d_once));
    float *once = host_result(d_once, n);
    cudaStream_t streams[STREAMS];
    float *d_y[STREAMS];
    for (int i = 0; i < STREAMS; i++) {
      CHECK_CUDA(cudaStreamCreateWithFlags(&streams[i], cudaStreamNonBlocking));
      d_y[i] = device_poisoned(n);
    }
    for (int r = 0; r < launches; r++)
      for (int i = 0; i < STREAMS; i++)
        CHECK_CUDA(pp_cuda_mlp_wide(streams[i], &in.a, n, k, packed, n_layers, PP_DTYPE_F32, false,
                                    d_y[i]));
    const gint64 deadline = g_get_monotonic_time() + 60 * G_USEC_PER_SEC;
    for (int i = 0; i < STREAMS; i++) {
      cudaError_t err;
      while ((err = cudaStreamQuery(streams[i])) == cudaErrorNotReady) {
        if (g_get_monotonic_time() > deadline)
          fail_msg("exact fp32, %u layers: %d launches on %d streams not done after 60 s: the "
                   "wide kernel's ring stalled",
                   n_layers, launches, STREAMS);
        g_usleep(1000);
      }
      CHECK_CUDA(err);
    }
    for (int i = 0; i < STREAMS; i++) {
      float *y = host_result(d_y[i], n);
      if (memcmp(y, once, n * sizeof(float)) != 0)
        fail_msg("exact fp32, %u layers: stream %d's results differ from one launch alone",
                 n_layers, i);
      g_free(y);
      cudaFree(d_y[i]);
      CHECK_CUDA(cudaStreamDestroy(streams[i]));
    }
    g_free(once);
    cudaFree(d_once);
    cudaFree(blob);
    pp_gpu_weights_free(&gw);
    pp_model_free(m);
    free_input(&in);
  }
}

/* Every one of the 65,536 values of each 16-bit type through a GELU
 * layer of the wide kernel and of the warp kernel, 32 wide (a warp's columns, none past the
 * layer's width), weight 1, no bias, then the mean of its 32 equal
 * outputs (exact: weights of 1/32), against the per-layer path's GELU on
 * the same values (bias_act): the same value, infinities, subnormals and
 * NaN included. */
static void
test_wide_gelu_every_value(void **state)
{
  (void) state;
  enum { N = 1 << 16, WIDTH = 32 };
  test_rng rng;
  test_rng_seed(&rng, seed + 12);
  const uint32_t outs[] = { WIDTH, 1 };
  const pp_act acts[] = { G, ID };
  pp_model *m = random_layers(&rng, 1, 2, outs, acts, false);
  for (unsigned j = 0; j < WIDTH; j++)
    m->layers[0].w[j] = 1.0f, m->layers[1].w[j] = 1.0f / WIDTH;
  float *x = g_new(float, N);
  void *d_h = device_copy(NULL, N * sizeof(uint16_t));
  for (pp_dtype t = PP_DTYPE_BF16; t <= PP_DTYPE_F16; t++) {
    for (uint32_t i = 0; i < N; i++)
      x[i] = pp_dtype_from_bits(t, (uint16_t) i);
    float *d_x = device_copy(x, N * sizeof(float));
    const pp_cuda_a a = { .kind = PP_A_F32, .data = d_x, .ld = 1 };
    CHECK_CUDA(pp_cuda_cast(kc_stream, d_x, N, t, false, d_h));
    CHECK_CUDA(pp_cuda_bias_act(kc_stream, d_h, t, N, 1, 1, NULL, G));
    float *want = host_halves(d_h, N, t);
    const pp_precision p = t == PP_DTYPE_BF16 ? PP_PRECISION_BF16 : PP_PRECISION_FP16;
    for (int warp = 0; warp < 2; warp++) {
      float *y = packed_result(m, p, &a, N, 1, warp);
      for (uint32_t i = 0; i < N; i++)
        if (!(isnan(want[i]) && isnan(y[i])) && y[i] != want[i])
          fail_msg("%s kernel, %s GELU(%.9g) (0x%04x): %.9g, the per-layer path %.9g",
                   warp ? "warp" : "wide", pp_dtype_name(t), x[i], i, y[i], want[i]);
      g_free(y);
    }
    g_free(want);
    cudaFree(d_x);
  }
  g_free(x);
  cudaFree(d_h);
  pp_model_free(m);
}

static cudaError_t
wide_tf32(cudaStream_t stream, const pp_cuda_a *x, uint32_t m, uint32_t k,
          const pp_cuda_wide_layer *packed, unsigned n_layers, pp_dtype type, float *y)
{
  return pp_cuda_mlp_wide(stream, x, m, k, packed, n_layers, type, true, y);
}

static cudaError_t
warp_exact(cudaStream_t stream, const pp_cuda_a *x, uint32_t m, uint32_t k,
           const pp_cuda_wide_layer *packed, unsigned n_layers, pp_dtype type, float *y)
{
  return pp_cuda_mlp_warp(stream, x, m, k, packed, n_layers, type, false, y);
}

/* Shapes the launchers refuse, and a packer given no stream or no type. */
static void
test_wide_checks_shapes(void **state)
{
  (void) state;
  float *dummy = device_poisoned(64);
  const pp_cuda_a a = { .kind = PP_A_F32, .data = dummy, .ld = 4 };
  const pp_cuda_wide_layer net[3] = { { dummy, NULL, 4, 8, ID },
                                      { dummy, NULL, 8, 8, ID },
                                      { dummy, NULL, 8, 1, ID } };
  float *y = device_poisoned(4);
  pp_cuda_wide_layer unchained[3] = { net[0], net[1], net[2] };
  unchained[2].in = 7;
  typedef cudaError_t (*one_kernel)(cudaStream_t, const pp_cuda_a *, uint32_t, uint32_t,
                                    const pp_cuda_wide_layer *, unsigned, pp_dtype, float *);
  static const one_kernel kernels[] = { wide_tf32, warp_exact };
  for (size_t i = 0; i < G_N_ELEMENTS(kernels); i++)
    for (pp_dtype t = PP_DTYPE_F32; t <= PP_DTYPE_F16; t++) {
      assert_int_equal(kernels[i](NULL, &a, 4, 4, net, 3, t, y), cudaErrorInvalidValue);
      assert_int_equal(kernels[i](kc_stream, &a, 4, 4, net, 1, t, y), cudaErrorInvalidValue);
      assert_int_equal(kernels[i](kc_stream, &a, 4, 5, net, 3, t, y), cudaErrorInvalidValue);
      assert_int_equal(kernels[i](kc_stream, &a, 4, 4, unchained, 3, t, y), cudaErrorInvalidValue);
    }
  pp_cuda_wide_layer packed[3];
  assert_int_equal(pp_cuda_wide_pack(NULL, PP_DTYPE_BF16, false, net, 3, dummy, packed),
                   cudaErrorInvalidValue);
  assert_int_equal(pp_cuda_wide_pack(kc_stream, PP_N_DTYPES, false, net, 3, dummy, packed),
                   cudaErrorInvalidValue);
  assert_int_equal(pp_cuda_warp_pack(NULL, PP_DTYPE_BF16, false, net, 3, dummy, packed),
                   cudaErrorInvalidValue);
  assert_int_equal(pp_cuda_warp_pack(kc_stream, PP_N_DTYPES, false, net, 3, dummy, packed),
                   cudaErrorInvalidValue);
  /* A hidden layer past the warp kernel's widest. */
  const pp_cuda_wide_layer too_wide[2] = { { dummy, NULL, 4, PP_WARP_MAX_D + 1, ID },
                                           { dummy, NULL, PP_WARP_MAX_D + 1, 1, ID } };
  assert_int_equal(pp_cuda_warp_pack(kc_stream, PP_DTYPE_F32, false, too_wide, 2, dummy, packed),
                   cudaErrorInvalidValue);
  cudaFree(dummy);
  cudaFree(y);
}

int
main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_wide_mlp),
    cmocka_unit_test(test_wide_exact_on_streams),
    cmocka_unit_test(test_wide_gelu_every_value),
    cmocka_unit_test(test_wide_checks_shapes),
  };
  return kc_main("cuda-wide", tests, G_N_ELEMENTS(tests), &seed, &quick);
}
