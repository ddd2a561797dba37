#include "testutil.h"

#include <glib.h>

#include "backend.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

void
test_reference_mlp(const pp_model *m, const float *x, uint32_t n, double *out, double *magnitude)
{
  double *hidden = malloc(sizeof(double) * m->d), *hidden_mag = malloc(sizeof(double) * m->d);
  for (uint32_t row = 0; row < n; row++) {
    for (uint32_t j = 0; j < m->d; j++) {
      double sum = m->b0 ? m->b0[j] : 0.0, mag = m->b0 ? fabs(m->b0[j]) : 0.0;
      for (uint32_t i = 0; i < m->k; i++) {
        const double term = (double) x[(size_t) row * m->k + i] * m->w0[(size_t) j * m->k + i];
        sum += term;
        mag += fabs(term);
      }
      hidden[j] = m->hidden_relu && sum < 0 ? 0 : sum;
      hidden_mag[j] = mag;
    }
    for (uint32_t o = 0; o < m->o; o++) {
      double sum = m->b1 ? m->b1[o] : 0.0, mag = m->b1 ? fabs(m->b1[o]) : 0.0;
      for (uint32_t j = 0; j < m->d; j++) {
        sum += hidden[j] * m->w1[(size_t) o * m->d + j];
        mag += hidden_mag[j] * fabs(m->w1[(size_t) o * m->d + j]);
      }
      out[(size_t) row * m->o + o] = sum < 0 ? 0 : sum;
      if (magnitude)
        magnitude[(size_t) row * m->o + o] = mag;
    }
  }
  free(hidden);
  free(hidden_mag);
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
    norm += magnitude[i] * magnitude[i];
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
  if (pp_backend_cuda_new(&opts, &b, &msg) < 0) {
    fprintf(stderr, "CUDA is not usable here: %s\n", msg);
    g_free(msg);
    return false;
  }
  b->ops->destroy(b);
  return true;
}
