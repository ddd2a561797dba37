/* Model loading: real files written by safetensors.torch.save_file, checked
 * against PyTorch's forward, and every malformed case rejected with a
 * message that names the problem. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "testutil.h"

/* ---- fixtures from PyTorch ----------------------------------------------- */

static void
check_fixture(const char *name, uint32_t k, uint32_t d, uint32_t o, bool hidden_relu, bool bias)
{
  const char *dir = getenv("PP_FIXTURES");
  if (!dir)
    skip();
  g_autofree char *path = g_strdup_printf("%s/%s.safetensors", dir, name);
  g_autofree char *ref_path = g_strdup_printf("%s/%s.ref", dir, name);
  pp_model *m = NULL;
  char *msg = NULL;
  if (pp_model_load(path, PP_HIDDEN_AUTO, &m, &msg) < 0)
    fail_msg("%s", msg);
  assert_int_equal(m->k, k);
  assert_int_equal(m->d, d);
  assert_int_equal(m->o, o);
  assert_int_equal(m->hidden_relu, hidden_relu);
  assert_int_equal(m->b0 != NULL, bias);
  assert_int_equal(m->b1 != NULL, bias);

  gchar *ref = NULL;
  gsize ref_len = 0;
  assert_true(g_file_get_contents(ref_path, &ref, &ref_len, NULL));
  int32_t dims[3];
  memcpy(dims, ref, sizeof dims);
  assert_int_equal(dims[1], (int32_t) k);
  assert_int_equal(dims[2], (int32_t) o);
  const uint32_t n = dims[0];
  assert_int_equal(ref_len, 12 + 4 * (size_t) n * (k + o));
  const float *x = (const float *) (ref + 12), *y_torch = x + (size_t) n * k;

  /* Our loaded weights through an independent reference vs PyTorch's forward. */
  double *ours = g_new(double, (size_t) n *o);
  test_reference_mlp(m, x, n, ours, NULL);
  float *ours_f = g_new(float, (size_t) n *o);
  double *torch_d = g_new(double, (size_t) n *o);
  for (size_t i = 0; i < (size_t) n * o; i++) {
    ours_f[i] = (float) ours[i];
    torch_d[i] = y_torch[i];
  }
  const double err = test_relative_error(ours_f, torch_d, (size_t) n * o);
  print_message("%s: rel err vs PyTorch %.2e\n", name, err);
  assert_true(err <= PP_FP32_REL_TOL);
  g_free(ours), g_free(ours_f), g_free(torch_d), g_free(ref);
  pp_model_free(m);
}

static void
test_fixture_relu_bias(void **state)
{
  (void) state;
  check_fixture("relu_bias", 37, 29, 5, true, true);
}

static void
test_fixture_plain_nobias(void **state)
{
  (void) state;
  check_fixture("plain_nobias", 64, 16, 1, false, false);
}

static void
test_fixture_half(void **state)
{
  (void) state;
  check_fixture("half", 24, 12, 3, true, true);
}

static void
test_fixture_bfloat(void **state)
{
  (void) state;
  check_fixture("bfloat", 24, 12, 3, false, true);
}

static void
test_fixture_prefixed(void **state)
{
  (void) state;
  check_fixture("prefixed", 20, 8, 2, true, true);
}

static void
test_hidden_override(void **state)
{
  (void) state;
  const char *dir = getenv("PP_FIXTURES");
  if (!dir)
    skip();
  g_autofree char *path = g_strdup_printf("%s/relu_bias.safetensors", dir);
  pp_model *m = NULL;
  char *msg = NULL;
  assert_int_equal(pp_model_load(path, PP_HIDDEN_NONE, &m, &msg), 0);
  assert_false(m->hidden_relu);
  pp_model_free(m);
}

/* ---- malformed files built by hand ---------------------------------------- */

/* safetensors bytes: header length, JSON, then `data_len` bytes of data. */
static uint8_t *
build(const char *json, size_t data_len, size_t *len)
{
  const size_t header = strlen(json);
  *len = 8 + header + data_len;
  uint8_t *bytes = g_malloc0(*len);
  for (int i = 0; i < 8; i++)
    bytes[i] = (uint8_t) ((uint64_t) header >> (8 * i));
  memcpy(bytes + 8, json, header);
  for (size_t i = 0; i < data_len; i++)
    bytes[8 + header + i] = (uint8_t) (i * 37 + 11);
  return bytes;
}

/* A valid 3→4→2 model: 0.weight [4,3], 0.bias [4], 2.weight [2,4], 2.bias [2]. */
#define W0 "\"0.weight\":{\"dtype\":\"F32\",\"shape\":[4,3],\"data_offsets\":[0,48]}"
#define B0 "\"0.bias\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[48,64]}"
#define W2 "\"2.weight\":{\"dtype\":\"F32\",\"shape\":[2,4],\"data_offsets\":[64,96]}"
#define B2 "\"2.bias\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[96,104]}"
#define VALID "{" W0 "," B0 "," W2 "," B2 "}"

static void
expect_error(const uint8_t *bytes, size_t len, const char *needle)
{
  pp_model *m = NULL;
  char *msg = NULL;
  const int rc = pp_model_parse(bytes, len, "m.safetensors", PP_HIDDEN_AUTO, &m, &msg);
  if (rc == 0)
    fail_msg("accepted; expected an error containing \"%s\"", needle);
  assert_int_equal(rc, -EINVAL);
  assert_null(m);
  assert_non_null(msg);
  if (!strstr(msg, needle) || strncmp(msg, "m.safetensors: ", 15) != 0)
    fail_msg("message \"%s\" lacks \"%s\"", msg, needle);
  g_free(msg);
}

static void
expect_json_error(const char *json, size_t data_len, const char *needle)
{
  size_t len;
  uint8_t *bytes = build(json, data_len, &len);
  expect_error(bytes, len, needle);
  g_free(bytes);
}

static void
test_valid_hand_built(void **state)
{
  (void) state;
  size_t len;
  uint8_t *bytes = build(VALID, 104, &len);
  pp_model *m = NULL;
  char *msg = NULL;
  assert_int_equal(pp_model_parse(bytes, len, "m", PP_HIDDEN_AUTO, &m, &msg), 0);
  assert_int_equal(m->k, 3);
  assert_int_equal(m->d, 4);
  assert_int_equal(m->o, 2);
  assert_true(m->hidden_relu);
  /* 0.weight[1][2] is the 6th float: bytes 20..23 of the data. */
  float expect;
  memcpy(&expect, bytes + len - 104 + 20, 4);
  assert_memory_equal(&m->w0[5], &expect, 4);
  pp_model_free(m);
  g_free(bytes);
}

static void
test_truncated(void **state)
{
  (void) state;
  size_t len;
  uint8_t *bytes = build(VALID, 104, &len);
  expect_error(bytes, 5, "fewer than the 8");
  expect_error(bytes, 40, "runs past the end of the file");
  expect_error(bytes, len - 1, "truncated or its header is wrong");
  g_free(bytes);
}

static void
test_bad_json(void **state)
{
  (void) state;
  expect_json_error("{\"0.weight\":{\"dtype\":\"F32\",", 0, "not valid JSON");
  expect_json_error("[1, 2]", 0, "not a JSON object");
  expect_json_error("{\"a\":1,\"a\":2}", 0, "duplicate member name");
  expect_json_error("{\"a\":01}", 0, "leading zero");
  expect_json_error("{\"a\":\"\\x\"}", 0, "bad escape");
  expect_json_error(VALID " trailing", 104, "unexpected data after");
  expect_json_error("{\"__metadata__\":{\"format\":3}," W0 "," B0 "," W2 "," B2 "}", 104,
                    "is not a string");
}

static void
test_metadata_and_escapes_accepted(void **state)
{
  (void) state;
  /* "0.w\u0065ight" is "0.weight"; metadata strings are allowed. */
  const char *json =
      "{\"__metadata__\":{\"format\":\"pt\",\"note\":\"caf\\u00e9 \\ud83d\\ude00\"},"
      "\"0.w\\u0065ight\":{\"dtype\":\"F32\",\"shape\":[4,3],\"data_offsets\":[0,48]}," B0 "," W2
      "," B2 "}";
  size_t len;
  uint8_t *bytes = build(json, 104, &len);
  pp_model *m = NULL;
  char *msg = NULL;
  if (pp_model_parse(bytes, len, "m", PP_HIDDEN_AUTO, &m, &msg) < 0)
    fail_msg("%s", msg);
  assert_string_equal(m->w0_name, "0.weight");
  pp_model_free(m);
  g_free(bytes);
}

static void
test_missing_and_extra_tensors(void **state)
{
  (void) state;
  expect_json_error("{}", 0, "holds no tensors");
  expect_json_error("{" W0 "," B0
                    ",\"2.bias\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[64,72]}}",
                    72, "missing tensor '2.weight'");
  expect_json_error("{" W0 "," B0 "}", 64, "holds one layer");
  expect_json_error("{" W0 "," B0 "," W2 "," B2
                    ",\"extra\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[104,108]}}",
                    108, "unexpected tensor 'extra'");
  expect_json_error("{" W0 "," B0 "," W2 "," B2
                    ",\"4.weight\":{\"dtype\":\"F32\",\"shape\":[1,2],\"data_offsets\":[104,112]}}",
                    112, "third layer");
  expect_json_error(
      "{" W0 "," B0
      ",\"net.2.weight\":{\"dtype\":\"F32\",\"shape\":[2,4],\"data_offsets\":[64,96]}}",
      96, "different modules");
}

static void
test_dtypes(void **state)
{
  (void) state;
  expect_json_error("{\"0.weight\":{\"dtype\":\"I64\",\"shape\":[4,3],\"data_offsets\":[0,96]},"
                    "\"2.weight\":{\"dtype\":\"F32\",\"shape\":[2,4],\"data_offsets\":[96,128]}}",
                    128, "has dtype I64; expected F32");
  expect_json_error("{\"0.weight\":{\"dtype\":\"F33\",\"shape\":[4,3],\"data_offsets\":[0,48]}}",
                    48, "unknown dtype 'F33'");
}

static void
test_byte_ranges(void **state)
{
  (void) state;
  /* 2.weight claims 4 floats more than its shape. */
  expect_json_error("{" W0 "," B0
                    ",\"2.weight\":{\"dtype\":\"F32\",\"shape\":[2,4],\"data_offsets\":[64,112]}}",
                    112, "needs 32 bytes");
  /* 2.weight reuses 0.bias's bytes. */
  expect_json_error("{" W0 "," B0 "," B2
                    ",\"2.weight\":{\"dtype\":\"F32\",\"shape\":[2,4],\"data_offsets\":[40,72]}}",
                    104, "overlap");
  /* A gap between 0.bias and 2.weight. */
  expect_json_error("{" W0 "," B0
                    ",\"2.weight\":{\"dtype\":\"F32\",\"shape\":[2,4],\"data_offsets\":[72,104]}}",
                    104, "belong to no tensor");
  /* Bytes after the last tensor. */
  expect_json_error(VALID, 120, "after the last tensor");
  /* Past the end of the data. */
  expect_json_error(VALID, 100, "truncated or its header is wrong");
  expect_json_error("{\"0.weight\":{\"dtype\":\"F32\",\"shape\":[4,3],\"data_offsets\":[48,0]}}",
                    48, "ordered pair");
  expect_json_error("{\"0.weight\":{\"dtype\":\"F32\",\"shape\":[4,-3],\"data_offsets\":[0,48]}}",
                    48, "not a non-negative integer");
}

static void
test_shapes(void **state)
{
  (void) state;
  expect_json_error("{" W0 "," B0
                    ",\"2.weight\":{\"dtype\":\"F32\",\"shape\":[2,5],\"data_offsets\":[64,104]}}",
                    104, "the layers don't chain");
  expect_json_error("{" W0 ",\"0.bias\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[48,60]},"
                    "\"2.weight\":{\"dtype\":\"F32\",\"shape\":[2,4],\"data_offsets\":[60,92]}}",
                    92, "'0.bias' has 3 entries but '0.weight' has 4 outputs");
  expect_json_error("{\"0.weight\":{\"dtype\":\"F32\",\"shape\":[12],\"data_offsets\":[0,48]},"
                    "\"2.weight\":{\"dtype\":\"F32\",\"shape\":[2,4],\"data_offsets\":[48,80]}}",
                    80, "a Linear weight has 2 dimensions");
  expect_json_error("{\"0.weight\":{\"dtype\":\"F32\",\"shape\":[0,3],\"data_offsets\":[0,0]},"
                    "\"2.weight\":{\"dtype\":\"F32\",\"shape\":[2,4],\"data_offsets\":[0,32]}}",
                    32, "has dimension 0");
}

static void
test_input_mismatch_message(void **state)
{
  (void) state;
  size_t len;
  uint8_t *bytes = build(VALID, 104, &len);
  pp_model *m = NULL;
  char *msg = NULL;
  assert_int_equal(pp_model_parse(bytes, len, "model.safetensors", PP_HIDDEN_AUTO, &m, &msg), 0);
  assert_int_equal(pp_model_check_inputs(m, 3, &msg), 0);
  assert_int_equal(pp_model_check_inputs(m, 5, &msg), -EINVAL);
  assert_string_equal(msg, "model.safetensors: tensor '0.weight' is 4×3 but the frame gives K=5");
  g_free(msg);
  pp_model_free(m);
  g_free(bytes);
}

static void
test_file_errors(void **state)
{
  (void) state;
  pp_model *m = NULL;
  char *msg = NULL;
  assert_int_equal(pp_model_load("/nonexistent/m.safetensors", PP_HIDDEN_AUTO, &m, &msg), -ENOENT);
  assert_non_null(strstr(msg, "No such file"));
  g_free(msg);
  g_autofree char *dir = g_dir_make_tmp("pp-model-XXXXXX", NULL);
  assert_int_equal(pp_model_load(dir, PP_HIDDEN_AUTO, &m, &msg), -EISDIR);
  assert_non_null(strstr(msg, "directory"));
  g_free(msg);
  g_rmdir(dir);
}

static void
test_generated_weights(void **state)
{
  (void) state;
  pp_model *a = NULL, *b = NULL, *c = NULL;
  assert_int_equal(pp_model_generate(300, 64, 2, PP_HIDDEN_AUTO, &a), 0);
  assert_int_equal(pp_model_generate(300, 64, 2, PP_HIDDEN_AUTO, &b), 0);
  assert_int_equal(pp_model_generate(301, 64, 2, PP_HIDDEN_AUTO, &c), 0);
  assert_false(a->hidden_relu);
  assert_memory_equal(a->w0, b->w0, sizeof(float) * 64 * 300);
  assert_memory_equal(a->w1, b->w1, sizeof(float) * 2 * 64);
  assert_memory_not_equal(a->w0, c->w0, sizeof(float) * 64 * 300);
  assert_true(a->id != b->id);
  const float bound = 1.0f / sqrtf(300);
  double sum_abs = 0;
  for (int i = 0; i < 64 * 300; i++) {
    assert_true(fabsf(a->w0[i]) <= bound);
    sum_abs += fabsf(a->w0[i]);
  }
  /* Uniform in ±bound has mean |w| = bound/2. */
  assert_float_equal(sum_abs / (64 * 300), bound / 2, bound * 0.05);
  pp_model_free(a), pp_model_free(b), pp_model_free(c);
  assert_int_equal(pp_model_generate(0, 1, 1, PP_HIDDEN_AUTO, &a), -EINVAL);
}

int
main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_fixture_relu_bias),
    cmocka_unit_test(test_fixture_plain_nobias),
    cmocka_unit_test(test_fixture_half),
    cmocka_unit_test(test_fixture_bfloat),
    cmocka_unit_test(test_fixture_prefixed),
    cmocka_unit_test(test_hidden_override),
    cmocka_unit_test(test_valid_hand_built),
    cmocka_unit_test(test_truncated),
    cmocka_unit_test(test_bad_json),
    cmocka_unit_test(test_metadata_and_escapes_accepted),
    cmocka_unit_test(test_missing_and_extra_tensors),
    cmocka_unit_test(test_dtypes),
    cmocka_unit_test(test_byte_ranges),
    cmocka_unit_test(test_shapes),
    cmocka_unit_test(test_input_mismatch_message),
    cmocka_unit_test(test_file_errors),
    cmocka_unit_test(test_generated_weights),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
