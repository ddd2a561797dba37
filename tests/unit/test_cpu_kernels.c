// SPDX-License-Identifier: LGPL-2.1-or-later
/* kernels/cpu_mlp against straight-from-the-definition loops in double, on
 * random inputs and shapes that are not multiples of the panel or row block. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_mlp.h"
#include "testutil.h"

static uint64_t seed;

static void
check_linear(uint32_t n, uint32_t in, uint32_t out, bool bias, pp_act act)
{
  test_rng rng;
  test_rng_seed(&rng, seed + n * 1000003u + in * 1009u + out);
  float *x = malloc(sizeof(float) * n * in), *w = malloc(sizeof(float) * out * in);
  float *b = malloc(sizeof(float) * out), *y = malloc(sizeof(float) * n * out);
  float *packed = malloc(sizeof(float) * pp_cpu_packed_floats(out, in));
  double *ref = malloc(sizeof(double) * n * out), *mag = malloc(sizeof(double) * n * out);
  test_rng_fill_floats(&rng, x, (size_t) n * in, -1, 1);
  test_rng_fill_floats(&rng, w, (size_t) out * in, -1, 1);
  test_rng_fill_floats(&rng, b, out, -1, 1);
  test_poison(y, (size_t) n * out);

  pp_cpu_pack_weights(w, out, in, packed);
  pp_cpu_linear(x, n, in, packed, bias ? b : NULL, out, act, y);

  for (uint32_t r = 0; r < n; r++)
    for (uint32_t o = 0; o < out; o++) {
      double sum = bias ? b[o] : 0, abs_sum = bias ? fabs(b[o]) : 0;
      for (uint32_t i = 0; i < in; i++) {
        const double term = (double) x[(size_t) r * in + i] * w[(size_t) o * in + i];
        sum += term;
        abs_sum += fabs(term);
      }
      ref[(size_t) r * out + o] = test_activation(act, sum);
      mag[(size_t) r * out + o] = abs_sum;
    }
  /* Measured against the magnitude of the sums' terms, which the rounding
   * scales with: a sum whose terms nearly cancel (one output, x·w near −b)
   * has a tiny value and the same error, and an activation may leave only a
   * few small outputs (ReLU) or squash them (sigmoid). */
  const double err = test_scaled_error(y, ref, mag, (size_t) n * out);
  print_message("linear n=%u in=%u out=%u bias=%d act=%d: rel err %.2e\n", n, in, out, bias,
                act.kind, err);
  assert_true(err <= PP_FP32_REL_TOL);
  free(x), free(w), free(b), free(y), free(packed), free(ref), free(mag);
}

static void
test_linear_shapes(void **state)
{
  (void) state;
  static const uint32_t shapes[][3] = {
    { 1, 1, 1 }, { 13, 37, 21 }, { 6, 16, 16 }, { 7, 100, 33 }, { 64, 256, 48 }, { 5, 3, 17 },
  };
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
    for (int kind = 0; kind < PP_N_ACTS; kind++)
      for (int bias = 0; bias < 2; bias++)
        check_linear(shapes[i][0], shapes[i][1], shapes[i][2], bias,
                     (pp_act){ (pp_act_kind) kind, 0.2f });
}

static void
test_matvec(void **state)
{
  (void) state;
  test_rng rng;
  test_rng_seed(&rng, seed);
  for (uint32_t d = 1; d <= 70; d += 7) {
    const uint32_t n = 9;
    float h[9 * 70], w[70], y[9];
    double ref[9], mag[9];
    test_rng_fill_floats(&rng, h, (size_t) n * d, -1, 1);
    test_rng_fill_floats(&rng, w, d, -1, 1);
    const float bias = (float) test_rng_uniform(&rng, -1, 1);
    for (int kind = 0; kind < PP_N_ACTS; kind++) {
      const pp_act act = { (pp_act_kind) kind, 0.2f };
      test_poison(y, n);
      pp_cpu_matvec(h, n, d, w, bias, act, y);
      for (uint32_t r = 0; r < n; r++) {
        double sum = bias, abs_sum = fabs(bias);
        for (uint32_t i = 0; i < d; i++) {
          sum += (double) h[r * d + i] * w[i];
          abs_sum += fabs((double) h[r * d + i] * w[i]);
        }
        ref[r] = test_activation(act, sum);
        mag[r] = abs_sum;
      }
      /* Against the terms' magnitude, as check_linear measures. */
      const double err = test_scaled_error(y, ref, mag, n);
      assert_true(err <= PP_FP32_REL_TOL);
    }
  }
}

/* Packing pads a partial panel with zeros, so its extra columns add nothing. */
static void
test_pack_layout(void **state)
{
  (void) state;
  const uint32_t out = 18, in = 3;
  float w[18 * 3];
  for (uint32_t i = 0; i < out * in; i++)
    w[i] = (float) (i + 1);
  float *packed = malloc(sizeof(float) * pp_cpu_packed_floats(out, in));
  assert_int_equal(pp_cpu_packed_floats(out, in), 2 * PP_CPU_PANEL * in);
  pp_cpu_pack_weights(w, out, in, packed);
  /* Panel 1, k = 2, column 1 is output 17's third weight; column 2 is padding. */
  assert_float_equal(packed[PP_CPU_PANEL * in + 2 * PP_CPU_PANEL + 1], w[17 * in + 2], 0);
  assert_float_equal(packed[PP_CPU_PANEL * in + 2 * PP_CPU_PANEL + 2], 0, 0);
  free(packed);
}

/* GELU (pp_gelu, one exp2 and a polynomial) against x·Φ(x) in double, on
 * every 61st float of [−8, 8] and past it: within 2.5e-7 relative for
 * x ≥ 0, 5e-8 absolute for x < 0 (the whole sweep measured 1.9e-7 and
 * 3.9e-8); infinities, NaN and zeros as x·Φ(x) gives them in float. */
static void
test_gelu(void **state)
{
  (void) state;
  double worst_rel = 0, worst_abs = 0;
  const uint32_t eight = 0x41000000u; /* 8.0f's bits; a float's sign is its top bit */
  for (uint32_t bits = 0; bits <= eight; bits += 61)
    for (int sign = 0; sign < 2; sign++) {
      const uint32_t b = bits | (uint32_t) sign << 31;
      float x;
      memcpy(&x, &b, sizeof x);
      const double want = 0.5 * (double) x * erfc(-(double) x / sqrt(2.0)), got = pp_gelu(x);
      if (fabs(want) < 0x1p-126) /* the result not a normal float */
        continue;
      if (x >= 0)
        worst_rel = fmax(worst_rel, fabs(got - want) / want);
      else
        worst_abs = fmax(worst_abs, fabs(got - want));
    }
  print_message("gelu: %.3g relative for x >= 0, %.3g absolute below\n", worst_rel, worst_abs);
  assert_true(worst_rel <= 2.5e-7);
  assert_true(worst_abs <= 5e-8);
  assert_true(pp_gelu(100.0f) == 100.0f && pp_gelu(3e38f) == 3e38f);
  assert_true(pp_gelu(-100.0f) == 0.0f && signbit(pp_gelu(-100.0f)));
  assert_true(pp_gelu(0.0f) == 0.0f && !signbit(pp_gelu(0.0f)) && signbit(pp_gelu(-0.0f)));
  assert_true(pp_gelu(INFINITY) == INFINITY);
  assert_true(isnan(pp_gelu(-INFINITY)) && isnan(pp_gelu(NAN))); /* −∞·0, as 0.5·x·(1 + erf) */
}

int
main(void)
{
  seed = test_seed();
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_linear_shapes),
    cmocka_unit_test(test_matvec),
    cmocka_unit_test(test_pack_layout),
    cmocka_unit_test(test_gelu),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
