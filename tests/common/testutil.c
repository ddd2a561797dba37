// SPDX-License-Identifier: LGPL-2.1-or-later
/* The tests' helpers: random numbers, a float64 reference MLP, error
 * measures. */
#include "testutil.h"

#include <glib.h>

#include "backend.h"
#include "cuda_module.h"
#include "engine.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

void
test_rng_seed(test_rng *r, uint64_t seed)
{
  r->state = seed ^ 0x853C49E6748FEA9Bull;
}

uint64_t
test_rng_next(test_rng *r)
{
  uint64_t z = (r->state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

double
test_rng_uniform(test_rng *r, double lo, double hi)
{
  return lo + (hi - lo) * ((test_rng_next(r) >> 11) * (1.0 / 9007199254740992.0));
}

void
test_rng_fill_bytes(test_rng *r, uint8_t *dst, size_t n)
{
  for (size_t i = 0; i < n; i++)
    dst[i] = (uint8_t) test_rng_next(r);
}

void
test_rng_fill_floats(test_rng *r, float *dst, size_t n, float lo, float hi)
{
  for (size_t i = 0; i < n; i++)
    dst[i] = (float) test_rng_uniform(r, lo, hi);
}

double
test_activation(pp_act act, double x)
{
  switch (act.kind) {
    case PP_ACT_RELU:
      return x > 0 ? x : 0;
    case PP_ACT_LEAKY_RELU:
      return x >= 0 ? x : (double) act.slope * x;
    case PP_ACT_GELU:
      return 0.5 * x * (1.0 + erf(x / sqrt(2.0)));
    case PP_ACT_GELU_TANH:
      return 0.5 * x * (1.0 + tanh(sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
    case PP_ACT_SILU:
      return x / (1.0 + exp(-x));
    case PP_ACT_SIGMOID:
      return 1.0 / (1.0 + exp(-x));
    case PP_ACT_TANH:
      return tanh(x);
    default:
      return x;
  }
}

void
test_reference_mlp(const pp_model *m, const float *x, uint32_t n, double *out, double *magnitude)
{
  uint32_t widest = m->k;
  for (unsigned l = 0; l < m->n_layers; l++)
    widest = widest > m->layers[l].out ? widest : m->layers[l].out;
  double *h = malloc(sizeof(double) * widest), *h_mag = malloc(sizeof(double) * widest);
  double *next = malloc(sizeof(double) * widest), *next_mag = malloc(sizeof(double) * widest);
  for (uint32_t row = 0; row < n; row++) {
    for (uint32_t i = 0; i < m->k; i++) {
      h[i] = x[(size_t) row * m->k + i];
      h_mag[i] = fabs(h[i]);
    }
    for (unsigned l = 0; l < m->n_layers; l++) {
      const pp_layer *layer = &m->layers[l];
      for (uint32_t j = 0; j < layer->out; j++) {
        double sum = layer->b ? layer->b[j] : 0.0, mag = layer->b ? fabs(layer->b[j]) : 0.0;
        for (uint32_t i = 0; i < layer->in; i++) {
          const double w = layer->w[(size_t) j * layer->in + i];
          sum += h[i] * w;
          mag += h_mag[i] * fabs(w);
        }
        /* Rounding error scales with the sum of |terms|; every activation
         * here changes it by at most ~1.13× (GELU's steepest slope). */
        next[j] = test_activation(layer->act, sum);
        next_mag[j] = mag;
      }
      double *t = h;
      h = next, next = t;
      t = h_mag, h_mag = next_mag, next_mag = t;
    }
    for (uint32_t o = 0; o < m->o; o++) {
      out[(size_t) row * m->o + o] = h[o];
      if (magnitude)
        magnitude[(size_t) row * m->o + o] = h_mag[o];
    }
  }
  free(h), free(h_mag), free(next), free(next_mag);
}

double
test_relative_error(const float *a, const double *ref, size_t n)
{
  double diff = 0, norm = 0;
  for (size_t i = 0; i < n; i++) {
    if (isnan(a[i]))
      return INFINITY;
    diff += (a[i] - ref[i]) * (a[i] - ref[i]);
    norm += ref[i] * ref[i];
  }
  if (norm == 0)
    return diff == 0 ? 0 : INFINITY;
  return sqrt(diff / norm);
}

double
test_scaled_error(const float *a, const double *ref, const double *magnitude, size_t n)
{
  double diff = 0, norm = 0;
  for (size_t i = 0; i < n; i++) {
    if (isnan(a[i]))
      return INFINITY;
    diff += (a[i] - ref[i]) * (a[i] - ref[i]);
    /* f(s) is off by ~f'(s)·err(s) from the sum's error, which scales with
     * the sum of |terms|, plus its own rounding, which scales with |f(s)|. */
    const double scale = magnitude[i] + fabs(ref[i]);
    norm += scale * scale;
  }
  if (norm == 0)
    return diff == 0 ? 0 : INFINITY;
  return sqrt(diff / norm);
}

uint64_t
test_seed(void)
{
  const char *env = getenv("PP_TEST_SEED");
  uint64_t seed = env ? strtoull(env, NULL, 0) : (uint64_t) time(NULL);
  fprintf(stderr, "random seed %llu (set PP_TEST_SEED to replay)\n", (unsigned long long) seed);
  return seed;
}

void
test_poison(float *dst, size_t n)
{
  for (size_t i = 0; i < n; i++)
    dst[i] = NAN;
}

bool
test_cuda_usable(void)
{
  pp_backend_options opts = { .kind = PP_BACKEND_CUDA };
  pp_backend *b = NULL;
  char *msg = NULL;
  /* A module that does not load is a broken build, not a missing GPU:
   * fail rather than skip, unless the CUDA libraries are hidden on purpose
   * (tests/without-cuda.sh), where loading must fail. */
  const bool hidden = g_getenv("PP_TEST_CUDA_LIBS_HIDDEN") != NULL;
  const bool loads = pp_cuda_module_get(&msg) != NULL;
  if (pp_backend_have_cuda() && loads == hidden) {
    fprintf(stderr, "%s\n",
            loads ? "the CUDA module loads although its libraries are hidden" : msg);
    exit(1);
  }
  g_clear_pointer(&msg, g_free);
  if (pp_backend_cuda_new(&opts, &b, &msg) < 0) {
    fprintf(stderr, "CUDA is not usable here: %s\n", msg);
    g_clear_pointer(&msg, g_free);
    return false;
  }
  b->ops->destroy(b);
  return true;
}

double
test_precision_tol(pp_precision precision)
{
  switch (precision) {
    case PP_PRECISION_BF16:
      return PP_BF16_SCALED_TOL;
    case PP_PRECISION_FP16:
      return PP_FP16_SCALED_TOL;
    case PP_PRECISION_TF32:
      return 1e-3;
    default:
      return PP_FP32_REL_TOL;
  }
}

void
test_run_frames(const pp_backend_options *opts, const pp_model *model,
                const pp_frame_layout *layout, void *const *frames, float *const *outputs,
                int count)
{
  pp_backend *backend = NULL;
  char *msg = NULL;
  if (pp_backend_open(opts, NULL, NULL, &backend, NULL, &msg) < 0 || !backend) {
    fprintf(stderr, "opening the backend: %s\n", msg);
    abort();
  }
  pp_engine *engine = pp_engine_new(backend, NULL, NULL);
  if (pp_engine_configure(engine, model, layout, 1, NULL, &msg) < 0) {
    fprintf(stderr, "configure: %s\n", msg);
    abort();
  }
  for (int i = 0; i < count; i++) {
    unsigned slot;
    pp_item item;
    const pp_job job = { .input = frames[i], .output = outputs[i] };
    if (pp_engine_acquire(engine, &slot) < 0 ||
        pp_engine_submit(engine, slot, &job, GINT_TO_POINTER(i + 1), &msg) < 0 ||
        pp_engine_pop(engine, &item) < 0 || item.status < 0 ||
        GPOINTER_TO_INT(item.user) != i + 1) {
      fprintf(stderr, "frame %d did not come through: %s\n", i, msg ? msg : "");
      abort();
    }
    pp_engine_release(engine, item.ticket);
  }
  pp_engine_free(engine);
}

uint8_t *
test_safetensors_bytes(const char *json, const void *data, size_t data_len, size_t *len)
{
  const size_t header = strlen(json);
  *len = 8 + header + data_len;
  uint8_t *bytes = g_malloc0(*len);
  for (int i = 0; i < 8; i++)
    bytes[i] = (uint8_t) ((uint64_t) header >> (8 * i));
  memcpy(bytes + 8, json, header);
  if (data)
    memcpy(bytes + 8 + header, data, data_len);
  return bytes;
}

char *
test_write_safetensors(const char *json, const void *data, size_t data_len, size_t cut)
{
  size_t len;
  uint8_t *bytes = test_safetensors_bytes(json, data, data_len, &len);
  char *path = NULL;
  const int fd = g_file_open_tmp("pp-model-XXXXXX.safetensors", &path, NULL);
  if (fd >= 0)
    close(fd);
  if (fd < 0 || !g_file_set_contents(path, (const char *) bytes, (gssize) (len - cut), NULL)) {
    fprintf(stderr, "cannot write a model file for the test\n");
    abort();
  }
  g_free(bytes);
  return path;
}
