// SPDX-License-Identifier: LGPL-2.1-or-later
/* Model loading: real files written by safetensors.torch.save_file and by
 * tools/pingpong-export, checked against PyTorch's forward; descriptions of
 * the layers (metadata, the layers property, the old convention); and
 * every malformed case rejected with a message that names the problem. */
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

/* Loads fixture `name` (described by `layers` when not NULL) and checks
 * our reading of it against PyTorch's forward; returns the model. */
static pp_model *
load_fixture(const char *name, const char *layers)
{
  const char *dir = getenv("PP_FIXTURES");
  if (!dir)
    skip();
  g_autofree char *path = g_strdup_printf("%s/%s.safetensors", dir, name);
  g_autofree char *ref_path = g_strdup_printf("%s/%s.ref", dir, name);
  pp_model *m = NULL;
  char *msg = NULL;
  if (pp_model_load(path, layers, PP_HIDDEN_AUTO, &m, &msg) < 0)
    fail_msg("%s", msg);
  const uint32_t k = m->k, o = m->o;

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
  g_autofree char *described = pp_model_describe(m);
  print_message("%s (%s): rel err vs PyTorch %.2e\n", name, described, err);
  assert_true(err <= PP_FP32_REL_TOL);
  g_free(ours), g_free(ours_f), g_free(torch_d), g_free(ref);
  return m;
}

static void
check_fixture(const char *name, uint32_t k, uint32_t d, uint32_t o, bool hidden_relu, bool bias)
{
  pp_model *m = load_fixture(name, NULL);
  assert_int_equal(m->n_layers, 2);
  assert_int_equal(m->k, k);
  assert_int_equal(m->layers[0].out, d);
  assert_int_equal(m->o, o);
  assert_int_equal(m->layers[0].act.kind, hidden_relu ? PP_ACT_RELU : PP_ACT_IDENTITY);
  assert_int_equal(m->layers[1].act.kind, PP_ACT_RELU);
  assert_int_equal(m->layers[0].b != NULL, bias);
  assert_int_equal(m->layers[1].b != NULL, bias);
  /* No description: the convention was assumed, and the model says so. */
  assert_non_null(m->assumed);
  assert_non_null(strstr(m->assumed, "two-layer convention"));
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

/* Files from tools/pingpong-export: the description in the metadata gives
 * every activation and depth, and nothing is assumed. */
static void
test_exported_activations(void **state)
{
  (void) state;
  static const struct {
    const char *name;
    pp_act_kind kind;
  } cases[] = {
    { "act_identity", PP_ACT_IDENTITY },     { "act_relu", PP_ACT_RELU },
    { "act_leaky_relu", PP_ACT_LEAKY_RELU }, { "act_gelu", PP_ACT_GELU },
    { "act_gelu_tanh", PP_ACT_GELU_TANH },   { "act_silu", PP_ACT_SILU },
    { "act_sigmoid", PP_ACT_SIGMOID },       { "act_tanh", PP_ACT_TANH },
  };
  for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
    pp_model *m = load_fixture(cases[i].name, NULL);
    assert_null(m->assumed);
    assert_int_equal(m->n_layers, 3);
    assert_int_equal(m->layers[0].act.kind, cases[i].kind);
    assert_int_equal(m->layers[1].act.kind, cases[i].kind);
    assert_int_equal(m->layers[2].act.kind, PP_ACT_IDENTITY);
    if (cases[i].kind == PP_ACT_LEAKY_RELU)
      assert_float_equal(m->layers[0].act.slope, 0.1f, 1e-7);
    pp_model_free(m);
  }
}

static void
test_exported_depths(void **state)
{
  (void) state;
  for (unsigned depth = 1; depth <= 6; depth++) {
    g_autofree char *name = g_strdup_printf("depth%u", depth);
    pp_model *m = load_fixture(name, NULL);
    assert_null(m->assumed);
    assert_int_equal(m->n_layers, depth);
    pp_model_free(m);
  }
}

/* A plain save_file of Linear, GELU, Linear: the layers property says what
 * the file cannot, and overrides what the convention would assume. */
static void
test_layers_property(void **state)
{
  (void) state;
  pp_model *m = load_fixture("plain_gelu", "Linear, GELU, Linear");
  assert_null(m->assumed);
  assert_int_equal(m->layers[0].act.kind, PP_ACT_GELU);
  assert_int_equal(m->layers[1].act.kind, PP_ACT_IDENTITY);
  pp_model_free(m);
  /* The property also overrides a file's own description. */
  const char *dir = getenv("PP_FIXTURES");
  g_autofree char *path = g_strdup_printf("%s/act_silu.safetensors", dir);
  char *msg = NULL;
  assert_int_equal(
      pp_model_load(path, "linear, tanh, linear, relu, linear, sigmoid", PP_HIDDEN_AUTO, &m, &msg),
      0);
  assert_int_equal(m->layers[0].act.kind, PP_ACT_TANH);
  assert_int_equal(m->layers[2].act.kind, PP_ACT_SIGMOID);
  pp_model_free(m);
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
  assert_int_equal(pp_model_load(path, NULL, PP_HIDDEN_NONE, &m, &msg), 0);
  assert_int_equal(m->layers[0].act.kind, PP_ACT_IDENTITY);
  pp_model_free(m);
}

/* ---- malformed files built by hand ---------------------------------------- */

/* safetensors bytes: header length, JSON, then `data_len` bytes of data. */
static uint8_t *
build(const char *json, size_t data_len, size_t *len)
{
  uint8_t *data = g_malloc(data_len ? data_len : 1);
  for (size_t i = 0; i < data_len; i++)
    data[i] = (uint8_t) (i * 37 + 11);
  uint8_t *bytes = test_safetensors_bytes(json, data, data_len, len);
  g_free(data);
  return bytes;
}

/* A valid 3→4→2 model: 0.weight [4,3], 0.bias [4], 2.weight [2,4], 2.bias [2]. */
#define W0 "\"0.weight\":{\"dtype\":\"F32\",\"shape\":[4,3],\"data_offsets\":[0,48]}"
#define B0 "\"0.bias\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[48,64]}"
#define W2 "\"2.weight\":{\"dtype\":\"F32\",\"shape\":[2,4],\"data_offsets\":[64,96]}"
#define B2 "\"2.bias\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[96,104]}"
#define VALID "{" W0 "," B0 "," W2 "," B2 "}"

static void
expect_error_described(const uint8_t *bytes, size_t len, const char *layers, const char *needle)
{
  pp_model *m = NULL;
  char *msg = NULL;
  const int rc = pp_model_parse(bytes, len, "m.safetensors", layers, PP_HIDDEN_AUTO, &m, &msg);
  if (rc == 0)
    fail_msg("accepted; expected an error containing \"%s\"", needle);
  assert_int_equal(rc, -EINVAL);
  assert_null(m);
  assert_non_null(msg);
  if (!strstr(msg, needle) || strncmp(msg, "m.safetensors: ", 15) != 0)
    fail_msg("message \"%s\" lacks \"%s\"", msg, needle);
  g_clear_pointer(&msg, g_free);
}

static void
expect_error(const uint8_t *bytes, size_t len, const char *needle)
{
  expect_error_described(bytes, len, NULL, needle);
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
  assert_int_equal(pp_model_parse(bytes, len, "m", NULL, PP_HIDDEN_AUTO, &m, &msg), 0);
  assert_int_equal(m->k, 3);
  assert_int_equal(m->layers[0].out, 4);
  assert_int_equal(m->o, 2);
  assert_int_equal(m->layers[0].act.kind, PP_ACT_RELU);
  /* 0.weight[1][2] is the 6th float: bytes 20..23 of the data. */
  float expect;
  memcpy(&expect, bytes + len - 104 + 20, 4);
  assert_memory_equal(&m->layers[0].w[5], &expect, 4);
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
  expect_json_error("", 0, "the header is empty");
  /* json-glib keeps the last of two same-named members; the loader refuses
   * them, as the format says, wherever they are. */
  expect_json_error("{\"a\":1,\"a\":2}", 0, "duplicate member name 'a'");
  expect_json_error("{" W0 "," B0 "," W2 "," B2 "," B0 "}", 104, "duplicate member name '0.bias'");
  expect_json_error("{\"0.weight\":{\"dtype\":\"F32\",\"shape\":[4,3],\"dtype\":\"F32\","
                    "\"data_offsets\":[0,48]}}",
                    48, "duplicate member name 'dtype'");
  expect_json_error(VALID " trailing", 104, "not valid JSON");
  expect_json_error("{\"__metadata__\":{},\"__metadata__\":{}," W0 "," B0 "," W2 "," B2 "}", 104,
                    "duplicate member name '__metadata__'");
  /* Nesting is bounded before json-glib, which would recurse off its stack;
   * brackets inside strings do not count. */
  GString *deep = g_string_new("{\"a\":");
  for (int i = 0; i < 100000; i++)
    g_string_append_c(deep, '[');
  expect_json_error(deep->str, 0, "nested deeper than 32 levels at byte 36");
  g_string_free(deep, TRUE);
  expect_json_error("{\"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[\\\"\":1}", 0,
                    "is not an object");
  /* Integers json-glib cannot hold in 64 bits come out negative, or (below
   * INT64_MIN) as INT64_MAX: refused either way. */
  expect_json_error("{\"0.weight\":{\"dtype\":\"F32\",\"shape\":[4,3],"
                    "\"data_offsets\":[0,18446744073709551664]}}",
                    48, "not an ordered pair of integers");
  expect_json_error("{\"0.weight\":{\"dtype\":\"F32\",\"shape\":[-9223372036854775809,3],"
                    "\"data_offsets\":[0,48]}}",
                    48, "too large to address");
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
  if (pp_model_parse(bytes, len, "m", NULL, PP_HIDDEN_AUTO, &m, &msg) < 0)
    fail_msg("%s", msg);
  assert_string_equal(m->layers[0].name, "0.weight");
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
  /* One layer is a model, but not of the old convention: it needs saying. */
  expect_json_error("{" W0 "," B0 "}", 64, "holds 1 Linear layers and says nothing");
  expect_json_error("{" W0 "," B0 "," W2 "," B2
                    ",\"extra\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[104,108]}}",
                    108, "unexpected tensor 'extra'");
  expect_json_error("{" W0 "," B0 "," W2 "," B2
                    ",\"4.weight\":{\"dtype\":\"F32\",\"shape\":[1,2],\"data_offsets\":[104,112]}}",
                    112, "holds 3 Linear layers and says nothing of its activations");
  expect_json_error(
      "{" W0 "," B0
      ",\"net.2.weight\":{\"dtype\":\"F32\",\"shape\":[2,4],\"data_offsets\":[64,96]}}",
      96, "different modules");
  /* Nine layers of a Sequential with activations between (indices 0, 2,
   * ..., 16), listed by name as a file lists them: all nine counted, the
   * first and last named by index, not by where the name sorts. */
  GString *json = g_string_new("{");
  for (int i = 0; i < 9; i++)
    g_string_append_printf(json,
                           "%s\"%d.weight\":{\"dtype\":\"F32\",\"shape\":[1,1],"
                           "\"data_offsets\":[%d,%d]}",
                           i ? "," : "", 16 - 2 * i, 4 * i, 4 * i + 4);
  g_string_append(json, "}");
  expect_json_error(json->str, 36, "holds 9 Linear layers ('0.weight' to '16.weight'); at most 8");
  g_string_free(json, TRUE);
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

/* The type a file keeps its weights in: one 16-bit type throughout, or
 * float32 (a float32 file, or one mixing types). */
static void
expect_stored(const char *w0, const char *b0, const char *w2, const char *b2, pp_dtype want)
{
  const size_t w0_size = w0[1] == '3' ? 4 : 2, b0_size = b0[1] == '3' ? 4 : 2,
               w2_size = w2[1] == '3' ? 4 : 2, b2_size = b2[1] == '3' ? 4 : 2;
  const size_t o1 = 12 * w0_size, o2 = o1 + 4 * b0_size, o3 = o2 + 8 * w2_size,
               end = o3 + 2 * b2_size;
  g_autofree char *json =
      g_strdup_printf("{\"0.weight\":{\"dtype\":\"%s\",\"shape\":[4,3],\"data_offsets\":[0,%zu]},"
                      "\"0.bias\":{\"dtype\":\"%s\",\"shape\":[4],\"data_offsets\":[%zu,%zu]},"
                      "\"2.weight\":{\"dtype\":\"%s\",\"shape\":[2,4],\"data_offsets\":[%zu,%zu]},"
                      "\"2.bias\":{\"dtype\":\"%s\",\"shape\":[2],\"data_offsets\":[%zu,%zu]}}",
                      w0, o1, b0, o1, o2, w2, o2, o3, b2, o3, end);
  size_t len;
  uint8_t *bytes = build(json, end, &len);
  pp_model *m = NULL;
  char *msg = NULL;
  if (pp_model_parse(bytes, len, "m.safetensors", NULL, PP_HIDDEN_AUTO, &m, &msg) < 0)
    fail_msg("%s", msg);
  assert_int_equal(m->stored, want);
  pp_model_free(m);
  g_free(bytes);
}

static void
test_stored_type(void **state)
{
  (void) state;
  expect_stored("F32", "F32", "F32", "F32", PP_DTYPE_F32);
  expect_stored("BF16", "BF16", "BF16", "BF16", PP_DTYPE_BF16);
  expect_stored("F16", "F16", "F16", "F16", PP_DTYPE_F16);
  expect_stored("BF16", "F32", "BF16", "BF16", PP_DTYPE_F32);
  expect_stored("F16", "F16", "BF16", "F16", PP_DTYPE_F32);
  expect_stored("F32", "BF16", "BF16", "BF16", PP_DTYPE_F32);
  pp_model *generated = NULL;
  assert_int_equal(pp_model_generate(12, 4, 2, PP_HIDDEN_RELU, &generated), 0);
  assert_int_equal(generated->stored, PP_DTYPE_F32);
  pp_model_free(generated);
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
  assert_int_equal(pp_model_parse(bytes, len, "model.safetensors", NULL, PP_HIDDEN_AUTO, &m, &msg),
                   0);
  assert_int_equal(pp_model_check_inputs(m, 3, &msg), 0);
  assert_int_equal(pp_model_check_inputs(m, 5, &msg), -EINVAL);
  assert_string_equal(msg, "model.safetensors: tensor '0.weight' is 4×3 but the frame gives K=5");
  g_clear_pointer(&msg, g_free);
  pp_model_free(m);
  g_free(bytes);
}

static void
test_file_errors(void **state)
{
  (void) state;
  pp_model *m = NULL;
  char *msg = NULL;
  assert_int_equal(pp_model_load("/nonexistent/m.safetensors", NULL, PP_HIDDEN_AUTO, &m, &msg),
                   -ENOENT);
  assert_non_null(strstr(msg, "No such file"));
  g_clear_pointer(&msg, g_free);
  g_autofree char *dir = g_dir_make_tmp("pp-model-XXXXXX", NULL);
  assert_int_equal(pp_model_load(dir, NULL, PP_HIDDEN_AUTO, &m, &msg), -EISDIR);
  assert_non_null(strstr(msg, "directory"));
  g_clear_pointer(&msg, g_free);
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
  assert_int_equal(a->layers[0].act.kind, PP_ACT_IDENTITY);
  assert_int_equal(a->layers[1].act.kind, PP_ACT_RELU);
  assert_memory_equal(a->layers[0].w, b->layers[0].w, sizeof(float) * 64 * 300);
  assert_memory_equal(a->layers[1].w, b->layers[1].w, sizeof(float) * 2 * 64);
  assert_memory_not_equal(a->layers[0].w, c->layers[0].w, sizeof(float) * 64 * 300);
  assert_true(a->id != b->id);
  const float bound = 1.0f / sqrtf(300);
  double sum_abs = 0;
  for (int i = 0; i < 64 * 300; i++) {
    assert_true(fabsf(a->layers[0].w[i]) <= bound);
    sum_abs += fabsf(a->layers[0].w[i]);
  }
  /* Uniform in ±bound has mean |w| = bound/2. */
  assert_float_equal(sum_abs / (64 * 300), bound / 2, bound * 0.05);
  pp_model_free(a), pp_model_free(b), pp_model_free(c);
  assert_int_equal(pp_model_generate(0, 1, 1, PP_HIDDEN_AUTO, &a), -EINVAL);

  /* From a description: widths and activations as written. */
  pp_model_desc desc;
  char *msg = NULL;
  assert_int_equal(
      pp_model_desc_parse("linear(6,5), gelu, linear(5,4), silu, linear(4,1)", &desc, &msg), 0);
  assert_int_equal(pp_model_generate_desc(6, &desc, &a, &msg), 0);
  assert_int_equal(a->n_layers, 3);
  assert_int_equal(a->layers[1].out, 4);
  assert_int_equal(a->layers[1].act.kind, PP_ACT_SILU);
  assert_int_equal(a->layers[2].act.kind, PP_ACT_IDENTITY);
  pp_model_free(a);
  assert_int_equal(pp_model_generate_desc(7, &desc, &a, &msg), -EINVAL);
  assert_non_null(strstr(msg, "takes 6 inputs but the frames give K=7"));
  g_clear_pointer(&msg, g_free);
  assert_int_equal(pp_model_desc_parse("linear, relu, linear(5,1)", &desc, &msg), 0);
  assert_int_equal(pp_model_generate_desc(6, &desc, &a, &msg), -EINVAL);
  assert_non_null(strstr(msg, "Linear layer 1 has no widths"));
  g_clear_pointer(&msg, g_free);
}

/* The description against the file's tensors (VALID: 4×3 then 2×4). */
static void
test_desc_against_tensors(void **state)
{
  (void) state;
  size_t len;
  uint8_t *bytes = build(VALID, 104, &len);
  expect_error_described(bytes, len, "linear, gelu, linear, relu, linear",
                         "the layers property describes 3 Linear layers but the file holds 2");
  expect_error_described(bytes, len, "linear(3,4), gelu, linear(4,3)",
                         "Linear layer 2: tensor '2.weight' is 2×4 (out×in) but the description "
                         "says linear(4,3)");
  expect_error_described(bytes, len, "linear, softmax, linear",
                         "the layers property 'linear, softmax, linear' is not a valid "
                         "description: module 2: unknown module 'softmax'");
  pp_model *m = NULL;
  char *msg = NULL;
  assert_int_equal(
      pp_model_parse(bytes, len, "m", "linear(3,4), silu, linear(4,2)", PP_HIDDEN_AUTO, &m, &msg),
      0);
  assert_int_equal(m->layers[0].act.kind, PP_ACT_SILU);
  assert_int_equal(m->layers[1].act.kind, PP_ACT_IDENTITY);
  g_autofree char *described = pp_model_describe(m);
  assert_string_equal(described, "linear(3,4), silu, linear(4,2)");
  pp_model_free(m);
  g_free(bytes);

  /* The same from the metadata; a bad one is an error naming it. */
  bytes = build("{\"__metadata__\":{\"pingpong.layers\":\"linear, tanh, linear, sigmoid\"}," W0
                "," B0 "," W2 "," B2 "}",
                104, &len);
  assert_int_equal(pp_model_parse(bytes, len, "m", NULL, PP_HIDDEN_AUTO, &m, &msg), 0);
  assert_null(m->assumed);
  assert_int_equal(m->layers[0].act.kind, PP_ACT_TANH);
  assert_int_equal(m->layers[1].act.kind, PP_ACT_SIGMOID);
  pp_model_free(m);
  g_free(bytes);
  bytes =
      build("{\"__metadata__\":{\"pingpong.layers\":\"linear, tanh\"}," W0 "," B0 "," W2 "," B2 "}",
            104, &len);
  expect_error(bytes, len,
               "its pingpong.layers metadata describes 1 Linear layer but the file "
               "holds 2");
  g_free(bytes);
}

int
main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_fixture_relu_bias),
    cmocka_unit_test(test_fixture_plain_nobias),
    cmocka_unit_test(test_stored_type),
    cmocka_unit_test(test_fixture_half),
    cmocka_unit_test(test_fixture_bfloat),
    cmocka_unit_test(test_fixture_prefixed),
    cmocka_unit_test(test_exported_activations),
    cmocka_unit_test(test_exported_depths),
    cmocka_unit_test(test_layers_property),
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
    cmocka_unit_test(test_desc_against_tensors),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
