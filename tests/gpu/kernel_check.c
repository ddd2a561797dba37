// SPDX-License-Identifier: LGPL-2.1-or-later
/* Shared by the GPU kernel tests (test_cuda_kernels.c, test_cuda_blas.c):
 * device buffers, inputs made from random frames, and the float64
 * reference with its error bound. */
#include "kernel_check.h"

#include <math.h>
#include <string.h>

#include "cpu_mlp.h"

cudaStream_t kc_stream;

int
kc_main(const char *name, const struct CMUnitTest *tests, size_t n, uint64_t *seed, bool *quick)
{
  if (!test_cuda_usable())
    return 77;
  *seed = test_seed();
  *quick = g_getenv("PP_GPU_QUICK") != NULL;
  if (cudaStreamCreateWithFlags(&kc_stream, cudaStreamNonBlocking) != cudaSuccess)
    return 1;
  const int failed = _cmocka_run_group_tests(name, tests, n, NULL, NULL);
  cudaStreamDestroy(kc_stream);
  return failed;
}

void *
device_copy(const void *host, size_t bytes)
{
  void *d = NULL;
  CHECK_CUDA(cudaMalloc(&d, bytes ? bytes : 4));
  if (host && bytes)
    CHECK_CUDA(cudaMemcpyAsync(d, host, bytes, cudaMemcpyHostToDevice, kc_stream));
  return d;
}

/* A device buffer of n floats, all NaN (0xFF bytes). */
float *
device_poisoned(size_t n)
{
  float *d = device_copy(NULL, n * sizeof(float));
  CHECK_CUDA(cudaMemsetAsync(d, 0xFF, n * sizeof(float), kc_stream));
  return d;
}

float *
host_halves(const void *d, size_t n, pp_dtype t)
{
  uint16_t *bits = g_new(uint16_t, n);
  CHECK_CUDA(cudaMemcpyAsync(bits, d, n * 2, cudaMemcpyDeviceToHost, kc_stream));
  CHECK_CUDA(cudaStreamSynchronize(kc_stream));
  float *v = g_new(float, n);
  for (size_t i = 0; i < n; i++)
    v[i] = pp_dtype_from_bits(t, bits[i]);
  g_free(bits);
  return v;
}

float *
host_result(const float *d, size_t n)
{
  float *h = g_new(float, n);
  CHECK_CUDA(cudaMemcpyAsync(h, d, n * sizeof(float), cudaMemcpyDeviceToHost, kc_stream));
  CHECK_CUDA(cudaStreamSynchronize(kc_stream));
  return h;
}

input
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

void
free_input(input *in)
{
  g_free(in->x);
  g_free(in->h_koff);
  cudaFree(in->d_frame);
  cudaFree(in->d_koff);
}

/* C = act(X·Wᵀ + b) in double, and the magnitude of each sum. */
void
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

void
expect_close(const char *what, const float *got, const double *ref, const double *mag, size_t n,
             bool scaled, double tol)
{
  const double err =
      scaled ? test_scaled_error(got, ref, mag, n) : test_relative_error(got, ref, n);
  print_message("%-52s error %.2e (bound %.0e)\n", what, err, tol);
  if (!(err <= tol))
    fail_msg("%s: error %.3e > %.0e", what, err, tol);
}

pp_model *
random_layers(test_rng *rng, uint32_t k, unsigned n_layers, const uint32_t *outs,
              const pp_act *acts, bool bias)
{
  pp_model *m = NULL;
  assert_int_equal(pp_model_generate_layers(k, n_layers, outs, acts, &m), 0);
  for (unsigned i = 0; i < n_layers; i++) {
    pp_layer *l = &m->layers[i];
    const float range = 1.5f / sqrtf((float) l->in);
    test_rng_fill_floats(rng, l->w, (size_t) l->out * l->in, -range, range);
    test_rng_fill_floats(rng, l->b, l->out, -0.5f, 0.5f);
    if (!bias)
      g_clear_pointer(&l->b, g_free);
  }
  return m;
}

pp_model *
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
