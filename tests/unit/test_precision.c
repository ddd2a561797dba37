// SPDX-License-Identifier: LGPL-2.1-or-later
/* The 16-bit precisions on the CPU: pp_dtype_round (and pp_round_tf32)
 * against values worked out by hand (ties, overflow, subnormals), and the CPU backend at every
 * precision against the float64 reference, within each precision's bound
 * and no closer than its rounding allows (so a backend that forgot to
 * round would fail). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <glib.h>
#include <math.h>

#include "backend.h"
#include "frame.h"
#include "cpu_mlp.h"
#include "dtype.h"
#include "testutil.h"

static uint64_t seed;

static void
expect_round(pp_dtype t, float v, float expected)
{
  const float got = pp_dtype_round(t, v);
  if (!(got == expected || (isnan(got) && isnan(expected))) || !signbit(got) != !signbit(expected))
    fail_msg("%s(%.10g) = %.10g, expected %.10g", pp_dtype_name(t), v, got, expected);
}

static void
test_round_values(void **state)
{
  (void) state;
  const pp_dtype b = PP_DTYPE_BF16, h = PP_DTYPE_F16;
  /* bf16: 8 significant bits, so steps of 2⁻⁷ in [1, 2). */
  expect_round(b, 1.0f, 1.0f);
  expect_round(b, 1.0f + 0x1p-8f, 1.0f);                      /* tie: to even */
  expect_round(b, 1.0f + 3 * 0x1p-8f, 1.0f + 0x1p-6f);        /* tie: to even, upwards */
  expect_round(b, 1.0f + 0x1p-8f + 0x1p-20f, 1.0f + 0x1p-7f); /* past the tie */
  expect_round(b, -3.14159265f, -3.140625f);
  expect_round(b, 0x1p-133f, 0x1p-133f);     /* bf16's smallest subnormal */
  expect_round(b, 0x1p-135f, 0.0f);          /* a quarter of its step */
  expect_round(b, 3 * 0x1p-134f, 0x1p-132f); /* 1.5 steps: to even (2) */
  expect_round(b, 3.4e38f, INFINITY);        /* past bf16's largest */
  expect_round(b, -0.0f, -0.0f);
  expect_round(b, NAN, NAN);
  /* f16: 11 significant bits, largest 65504, subnormal steps of 2⁻²⁴. */
  expect_round(h, 1.0f + 0x1p-11f, 1.0f);               /* tie: to even */
  expect_round(h, 1.0f + 3 * 0x1p-11f, 1.0f + 0x1p-9f); /* tie: to even, upwards */
  expect_round(h, 0.1f, 0.0999755859375f);              /* 1638/16384 */
  expect_round(h, 65504.0f, 65504.0f);
  expect_round(h, 65519.0f, 65504.0f);
  expect_round(h, 65520.0f, INFINITY); /* the tie above 65504 goes to infinity */
  expect_round(h, -70000.0f, -INFINITY);
  expect_round(h, 0x1p-25f, 0.0f);                /* half a subnormal step: to even (zero) */
  expect_round(h, 3 * 0x1p-25f, 0x1p-23f);        /* 1.5 steps: to even (2) */
  expect_round(h, 0x1p-14f + 0x1p-25f, 0x1p-14f); /* smallest normal, tie */
  expect_round(h, -5e-9f, -0.0f);
  expect_round(h, NAN, NAN);
  /* TF32: 11 significant bits, ties away from zero (cvt.rna). */
  static const struct {
    float v, expected;
  } tf32[] = {
    { 1.0f + 0x1p-11f, 1.0f + 0x1p-10f },       /* tie: away from zero */
    { -(1.0f + 0x1p-11f), -(1.0f + 0x1p-10f) }, /* and for negatives */
    { 1.0f + 0x1p-12f, 1.0f },                  /* below the tie */
    { 1.0f + 3 * 0x1p-11f, 1.0f + 0x1p-9f },    /* tie, upwards again */
    { 0.1f, 0.0999755859375f },                 /* 1638 · 2⁻¹⁴ */
    { 0x1.ffcp127f, 0x1.ffcp127f },             /* TF32's largest */
    { 0x1.ffep127f, INFINITY },                 /* the tie above it */
    { 3.4e38f, 0x1.ff8p127f },                  /* below it, to nearest */
    { 0x1p-136f + 0x1p-140f, 0x1p-136f },       /* subnormal: steps of 2⁻¹³⁶ */
    { 0x1p-137f, 0x1p-136f },                   /* a subnormal tie */
    { -0.0f, -0.0f },
    { INFINITY, INFINITY },
    { NAN, NAN },
  };
  for (size_t i = 0; i < G_N_ELEMENTS(tf32); i++) {
    const float got = pp_round_tf32(tf32[i].v);
    if (!(got == tf32[i].expected || (isnan(got) && isnan(tf32[i].expected))) ||
        !signbit(got) != !signbit(tf32[i].expected))
      fail_msg("tf32(%.10g) = %.10g, expected %.10g", tf32[i].v, got, tf32[i].expected);
  }
}

/* pp_dtype_from_bits against values worked out by hand, and on all 65,536
 * bit patterns of each type: every non-NaN value is its own rounding,
 * grows with its pattern, and its sign bit negates it; NaN patterns give
 * NaN. */
static void
test_from_bits(void **state)
{
  (void) state;
  const pp_dtype b = PP_DTYPE_BF16, h = PP_DTYPE_F16;
  const struct {
    pp_dtype t;
    uint16_t bits;
    float value;
  } known[] = {
    { b, 0x3f80, 1.0f },
    { b, 0xc049, -3.140625f },
    { b, 0x0001, 0x1p-133f },
    { b, 0x7f80, INFINITY },
    { b, 0x8000, -0.0f },
    { h, 0x3c00, 1.0f },
    { h, 0x2e66, 0.0999755859375f },
    { h, 0x7bff, 65504.0f },
    { h, 0x0001, 0x1p-24f },
    { h, 0x03ff, 1023 * 0x1p-24f },
    { h, 0x0400, 0x1p-14f },
    { h, 0xfc00, -INFINITY },
    { h, 0x8000, -0.0f },
  };
  for (size_t i = 0; i < G_N_ELEMENTS(known); i++) {
    const float got = pp_dtype_from_bits(known[i].t, known[i].bits);
    if (got != known[i].value || !signbit(got) != !signbit(known[i].value))
      fail_msg("%s 0x%04x = %.10g, expected %.10g", pp_dtype_name(known[i].t), known[i].bits, got,
               known[i].value);
  }
  for (pp_dtype t = PP_DTYPE_BF16; t <= PP_DTYPE_F16; t++) {
    const unsigned exponent_mask = t == b ? 0x7f80u : 0x7c00u;
    float before = -INFINITY; /* the positive patterns, by magnitude */
    for (unsigned bits = 0; bits < 0x8000u; bits++) {
      const float v = pp_dtype_from_bits(t, (uint16_t) bits);
      const bool nan = (bits & exponent_mask) == exponent_mask && (bits & ~exponent_mask & 0x7fffu);
      if (nan) {
        assert_true(isnan(v));
        assert_true(isnan(pp_dtype_from_bits(t, (uint16_t) (bits | 0x8000u))));
        continue;
      }
      assert_true(pp_dtype_round(t, v) == v);
      assert_true(v > before); /* increasing with the bits */
      assert_true(pp_dtype_from_bits(t, (uint16_t) (bits | 0x8000u)) == -v);
      before = v;
    }
  }
}

/* A frame through the CPU backend at `precision`, against float64; the
 * error against the reference returned. */
static double
cpu_error(pp_precision precision, const pp_model *m, const pp_frame_layout *layout, void *frame)
{
  const size_t count = (size_t) layout->n * m->o;
  float *out = g_new(float, count);
  test_poison(out, count);
  const pp_backend_options opts = { .kind = PP_BACKEND_CPU, .precision = precision };
  test_run_frames(&opts, m, layout, &frame, &out, 1);
  float *x = g_new(float, (size_t) layout->n * layout->k);
  double *ref = g_new(double, count), *mag = g_new(double, count);
  pp_cpu_gather(layout, frame, x);
  test_reference_mlp(m, x, layout->n, ref, mag);
  /* Relative to the results themselves: through four layers the sums of
   * |terms| grow ~√fan-in a layer while the results do not, so the scaled
   * error would hide a precision's rounding. */
  const double err = test_relative_error(out, ref, count);
  g_free(x), g_free(ref), g_free(mag), g_free(out);
  return err;
}

static void
check_model(const char *name, const pp_model *m, const pp_frame_layout *layout, void *frame)
{
  const double fp32 = cpu_error(PP_PRECISION_FP32, m, layout, frame);
  const double bf16 = cpu_error(PP_PRECISION_BF16, m, layout, frame);
  const double fp16 = cpu_error(PP_PRECISION_FP16, m, layout, frame);
  print_message("%s: relative error fp32 %.2e, bf16 %.2e, fp16 %.2e\n", name, fp32, bf16, fp16);
  if (!(fp32 <= PP_FP32_REL_TOL))
    fail_msg("%s fp32: %.3e > %.0e", name, fp32, PP_FP32_REL_TOL);
  if (!(bf16 <= PP_BF16_REL_TOL))
    fail_msg("%s bf16: %.3e > %.0e", name, bf16, PP_BF16_REL_TOL);
  if (!(fp16 <= PP_FP16_REL_TOL))
    fail_msg("%s fp16: %.3e > %.0e", name, fp16, PP_FP16_REL_TOL);
  /* Each 16-bit precision visibly rounds, bf16 (3 bits fewer) by more. */
  if (!(bf16 > 5e-4 && fp16 > 5e-5 && bf16 > 2 * fp16))
    fail_msg("%s: bf16 %.3e and fp16 %.3e do not look rounded", name, bf16, fp16);
}

static void
test_cpu_backend_precisions(void **state)
{
  (void) state;
  test_rng rng;
  test_rng_seed(&rng, seed);
  pp_frame_layout layout;
  char *msg = NULL;
  /* RGB 8×8 patches through deep's kind of model: GELU, GELU, SiLU. */
  assert_int_equal(
      pp_layout_for_video(PP_PIXEL_RGB, 72, 40, 216, PP_MAPPING_PATCHES, 8, &layout, &msg), 0);
  uint8_t *frame = g_malloc(layout.frame_bytes);
  test_rng_fill_bytes(&rng, frame, layout.frame_bytes);
  const uint32_t widths[4] = { 130, 67, 33, 1 };
  const pp_act acts[4] = { PP_ACT(PP_ACT_GELU), PP_ACT(PP_ACT_GELU), PP_ACT(PP_ACT_SILU),
                           PP_ACT(PP_ACT_IDENTITY) };
  pp_model *m = NULL;
  assert_int_equal(pp_model_generate_layers(layout.k, 4, widths, acts, &m), 0);
  check_model("rgb patches 192-130-67-33-1", m, &layout, frame);
  pp_model_free(m);
  /* Tensors of floats in ±1, the seed's two layers with ReLU, O = 5. */
  assert_int_equal(pp_layout_for_tensor(50, 301, &layout, &msg), 0);
  float *tensor = g_new(float, (size_t) 50 * 301);
  test_rng_fill_floats(&rng, tensor, (size_t) 50 * 301, -1, 1);
  assert_int_equal(pp_model_generate(301, 90, 5, PP_HIDDEN_RELU, &m), 0);
  check_model("tensor 301-90-relu-5", m, &layout, tensor);
  pp_model_free(m);
  g_free(frame), g_free(tensor);
}

static void
test_precision_names(void **state)
{
  (void) state;
  for (int p = 0; p < PP_N_PRECISIONS; p++) {
    pp_precision back;
    assert_int_equal(pp_precision_parse(pp_precision_name(p), &back), 0);
    assert_int_equal(back, p);
  }
  pp_precision back;
  assert_int_equal(pp_precision_parse("fp64", &back), -EINVAL);
  assert_int_equal(pp_precision_dtype(PP_PRECISION_TF32), PP_DTYPE_F32);
  assert_int_equal(pp_precision_dtype(PP_PRECISION_BF16), PP_DTYPE_BF16);
}

int
main(void)
{
  seed = test_seed();
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_round_values),
    cmocka_unit_test(test_from_bits),
    cmocka_unit_test(test_cpu_backend_precisions),
    cmocka_unit_test(test_precision_names),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
