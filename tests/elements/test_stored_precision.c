// SPDX-License-Identifier: LGPL-2.1-or-later
/* precision=auto (the default) runs a model file in the type it keeps its
 * weights in: a BF16 file at bf16, an F16 file at fp16, an F32 file at
 * fp32, as stats' precision says. Each run's scores are those of the same
 * precision set by hand (bit for bit: one code path), within that
 * precision's tolerance of the float64 reference, and a 16-bit file's
 * differ from an fp32 run of it (the precision took effect). On the CPU
 * backend. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <glib/gstdio.h>
#include <gst/check/gstharness.h>
#include <gst/gst.h>
#include <string.h>

#include "dtype.h"
#include "mlpharness.h"
#include "model.h"
#include "testutil.h"
#include "gstmain.h"

static uint64_t seed;

enum { K = 24, D = 16, O = 3, N = 40, FRAMES = 3 };
#define CAPS                                                                                       \
  "other/tensors,format=static,num_tensors=1,types=float32,dimensions=(string)24:40:1:1,"          \
  "framerate=30/1"

/* Little-endian bytes of `v` stored as `type`. The weights are k/64 with
 * |k| ≤ 38: exact in bfloat16 and float16 alike (8 significant bits, no
 * subnormal), so each type holds the same values and the encoding needs
 * no rounding. */
static size_t
put_value(uint8_t *dst, float v, pp_dtype type)
{
  uint32_t bits;
  memcpy(&bits, &v, 4);
  uint32_t out = bits;
  if (type == PP_DTYPE_BF16)
    out = bits >> 16;
  else if (type == PP_DTYPE_F16 && v != 0)
    out = (bits >> 31) << 15 | (((bits >> 23) & 0xff) - 127 + 15) << 10 | (bits & 0x7fffff) >> 13;
  else if (type == PP_DTYPE_F16)
    out = 0;
  const size_t size = type == PP_DTYPE_F32 ? 4 : 2;
  for (size_t i = 0; i < size; i++)
    dst[i] = (uint8_t) (out >> (8 * i));
  return size;
}

/* A K→D→O model with biases, every tensor as `type`, in a temporary file. */
static gchar *
write_model(pp_dtype type, test_rng *rng)
{
  const char *name = type == PP_DTYPE_F32 ? "F32" : type == PP_DTYPE_BF16 ? "BF16" : "F16";
  const size_t size = type == PP_DTYPE_F32 ? 4 : 2;
  const size_t counts[] = { (size_t) D * K, D, (size_t) O * D, O };
  size_t ends[4], at = 0;
  for (int i = 0; i < 4; i++)
    ends[i] = at += counts[i] * size;
  g_autofree gchar *json = g_strdup_printf(
      "{\"0.weight\":{\"dtype\":\"%s\",\"shape\":[%d,%d],\"data_offsets\":[0,%zu]},"
      "\"0.bias\":{\"dtype\":\"%s\",\"shape\":[%d],\"data_offsets\":[%zu,%zu]},"
      "\"2.weight\":{\"dtype\":\"%s\",\"shape\":[%d,%d],\"data_offsets\":[%zu,%zu]},"
      "\"2.bias\":{\"dtype\":\"%s\",\"shape\":[%d],\"data_offsets\":[%zu,%zu]}}",
      name, D, K, ends[0], name, D, ends[0], ends[1], name, O, D, ends[1], ends[2], name, O,
      ends[2], ends[3]);
  g_autofree uint8_t *data = g_malloc(ends[3]);
  uint8_t *p = data;
  for (int t = 0; t < 4; t++)
    for (size_t i = 0; i < counts[t]; i++)
      p += put_value(p, (float) ((int) (test_rng_next(rng) % 77) - 38) / 64.0f, type);
  return test_write_safetensors(json, data, ends[3], 0);
}

/* FRAMES frames of `xs` through cudamlp on `path` at `precision` (NULL:
 * the default); their scores, and stats' precision into *ran. */
static float *
run(const char *path, const char *precision, const float *xs, gchar **ran)
{
  GstElement *e = test_make_mlp("cpu", "model", path, NULL);
  if (precision)
    gst_util_set_object_arg(G_OBJECT(e), "precision", precision);
  GstBus *bus;
  GstHarness *h = test_harness_for(e, &bus);
  gst_harness_set_src_caps_str(h, CAPS);
  float *scores = g_new(float, (size_t) FRAMES *N *O);
  for (int f = 0; f < FRAMES; f++) {
    GstBuffer *in = gst_buffer_new_memdup(xs + (size_t) f * N * K, sizeof(float) * N * K);
    assert_int_equal(gst_harness_push(h, in), GST_FLOW_OK);
    GstBuffer *out = gst_harness_pull(h);
    assert_int_equal(gst_buffer_get_size(out), sizeof(float) * N * O);
    gst_buffer_extract(out, 0, scores + (size_t) f * N * O, sizeof(float) * N * O);
    gst_buffer_unref(out);
  }
  GstStructure *stats;
  g_object_get(h->element, "stats", &stats, NULL);
  *ran = g_strdup(gst_structure_get_string(stats, "precision"));
  gst_structure_free(stats);
  test_harness_finish(h, bus);
  return scores;
}

static void
check_file(pp_dtype type, const char *want)
{
  test_rng rng;
  test_rng_seed(&rng, seed + type);
  g_autofree gchar *path = write_model(type, &rng);
  float xs[FRAMES * N * K];
  test_rng_fill_floats(&rng, xs, G_N_ELEMENTS(xs), -1, 1);
  g_autofree gchar *ran = NULL, *ran_set = NULL, *ran_fp32 = NULL;
  g_autofree float *autos = run(path, NULL, xs, &ran);
  g_autofree float *set = run(path, want, xs, &ran_set);
  g_autofree float *fp32 = run(path, "fp32", xs, &ran_fp32);
  assert_string_equal(ran, want);
  assert_string_equal(ran_set, want);
  assert_string_equal(ran_fp32, "fp32");
  assert_memory_equal(autos, set, sizeof(float) * FRAMES * N * O);
  if (type != PP_DTYPE_F32)
    assert_memory_not_equal(autos, fp32, sizeof(float) * FRAMES * N * O);

  /* Against float64 on the file's weights (widened exactly on loading). */
  pp_model *model = NULL;
  gchar *msg = NULL;
  if (pp_model_load(path, NULL, PP_HIDDEN_AUTO, &model, &msg) < 0)
    fail_msg("%s", msg);
  assert_int_equal(model->stored, type);
  pp_precision precision;
  assert_int_equal(pp_precision_parse(want, &precision), 0);
  double ref[N * O], mag[N * O];
  for (int f = 0; f < FRAMES; f++) {
    test_reference_mlp(model, xs + (size_t) f * N * K, N, ref, mag);
    const double err = test_scaled_error(autos + (size_t) f * N * O, ref, mag, N * O);
    if (!(err <= test_precision_tol(precision)))
      fail_msg("%s file, frame %d: scaled error %.3e > %.0e", want, f, err,
               test_precision_tol(precision));
  }
  pp_model_free(model);
  g_unlink(path);
}

static void
test_bf16_file_runs_at_bf16(void **state)
{
  (void) state;
  check_file(PP_DTYPE_BF16, "bf16");
}

static void
test_f16_file_runs_at_fp16(void **state)
{
  (void) state;
  check_file(PP_DTYPE_F16, "fp16");
}

static void
test_f32_file_runs_at_fp32(void **state)
{
  (void) state;
  check_file(PP_DTYPE_F32, "fp32");
}

int
main(int argc, char **argv)
{
  gst_init(&argc, &argv);
  seed = test_seed();
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_bf16_file_runs_at_bf16),
    cmocka_unit_test(test_f16_file_runs_at_fp16),
    cmocka_unit_test(test_f32_file_runs_at_fp32),
  };
  return test_gst_run(tests, NULL);
}
