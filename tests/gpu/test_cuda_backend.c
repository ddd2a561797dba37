/* The engine on the CUDA backend: every MLP path, both completion modes,
 * with and without CUDA graphs, pinned and unpinned frames, against the
 * float64 reference; staging counted only for unpinned frames; flush and
 * teardown with work in flight on the GPU. Exits 77 without a device. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <cuda_runtime_api.h>
#include <errno.h>
#include <glib.h>
#include <stdio.h>
#include <string.h>

#include "backend_cuda.h"
#include "cpu_mlp.h"
#include "engine.h"
#include "frame.h"
#include "testutil.h"

static uint64_t seed;
/* PP_GPU_QUICK (compute-sanitizer runs): fewer cases where each is slow. */
static bool quick;

typedef struct {
  const char *name;
  pp_layout_kind kind;
  pp_pixel_format format;
  uint32_t width, height, patch; /* video; tensors: width = K, height = N */
  uint32_t d, o;
  pp_hidden_activation act;
  /* More than the seed's two layers: widths after K (the last is O), and
   * the activation after each. */
  unsigned n_layers;
  uint32_t widths[4];
  pp_act_kind acts[4];
} shape;

static const shape shapes[] = {
  { "gray8 rows 300x40 D=200 O=1",
    PP_LAYOUT_ROWS,
    PP_PIXEL_GRAY8,
    300,
    40,
    0,
    200,
    1,
    PP_HIDDEN_RELU,
    0,
    { 0 },
    { 0 } },
  { "bgr patches 45x31 p=6 D=300 O=7",
    PP_LAYOUT_PATCHES,
    PP_PIXEL_BGR,
    45,
    31,
    6,
    300,
    7,
    PP_HIDDEN_NONE,
    0,
    { 0 },
    { 0 } },
  { "rgb patches 64x48 p=8 D=256 O=1",
    PP_LAYOUT_PATCHES,
    PP_PIXEL_RGB,
    64,
    48,
    8,
    256,
    1,
    PP_HIDDEN_NONE,
    0,
    { 0 },
    { 0 } },
  { "tensor 777x50 D=300 O=40",
    PP_LAYOUT_TENSOR,
    0,
    777,
    50,
    0,
    300,
    40,
    PP_HIDDEN_RELU,
    0,
    { 0 },
    { 0 } },
  { "rgb patches 64x48 p=8 192-96-gelu-33-silu-1",
    PP_LAYOUT_PATCHES,
    PP_PIXEL_RGB,
    64,
    48,
    8,
    0,
    1,
    PP_HIDDEN_NONE,
    3,
    { 96, 33, 1 },
    { PP_ACT_GELU, PP_ACT_SILU, PP_ACT_IDENTITY } },
  { "tensor 777x50 4 layers tanh, leaky, sigmoid, O=40",
    PP_LAYOUT_TENSOR,
    0,
    777,
    50,
    0,
    0,
    40,
    PP_HIDDEN_NONE,
    4,
    { 300, 129, 65, 40 },
    { PP_ACT_TANH, PP_ACT_LEAKY_RELU, PP_ACT_GELU_TANH, PP_ACT_SIGMOID } },
  { "gray8 rows 300x40, one layer O=5",
    PP_LAYOUT_ROWS,
    PP_PIXEL_GRAY8,
    300,
    40,
    0,
    0,
    5,
    PP_HIDDEN_NONE,
    1,
    { 5 },
    { PP_ACT_IDENTITY } },
};

#define FRAMES 9

typedef struct {
  const shape *s;
  pp_frame_layout layout;
  pp_model *model;
  pp_engine *engine;
  void *frames[FRAMES];
  float *outputs[FRAMES];
  bool pinned;
} run;

static void
setup_run(run *r, const shape *s, const char *path, pp_completion completion, bool graphs,
          bool pinned, unsigned slots)
{
  memset(r, 0, sizeof *r);
  r->s = s;
  r->pinned = pinned;
  char *msg = NULL;
  if (s->kind == PP_LAYOUT_TENSOR) {
    assert_int_equal(pp_layout_for_tensor(s->height, s->width, &r->layout, &msg), 0);
  } else {
    const uint32_t bpp = s->format == PP_PIXEL_GRAY8 ? 1 : s->format <= PP_PIXEL_BGR ? 3 : 4;
    assert_int_equal(
        pp_layout_for_video(s->format, s->width, s->height, (s->width * bpp + 3) / 4 * 4,
                            s->kind == PP_LAYOUT_ROWS ? PP_MAPPING_ROWS : PP_MAPPING_PATCHES,
                            s->patch, &r->layout, &msg),
        0);
  }
  if (s->n_layers) {
    pp_act acts[4];
    for (unsigned i = 0; i < s->n_layers; i++)
      acts[i] = (pp_act){ s->acts[i], 0.1f };
    assert_int_equal(pp_model_generate_layers(r->layout.k, s->n_layers, s->widths, acts, &r->model),
                     0);
  } else {
    assert_int_equal(pp_model_generate(r->layout.k, s->d, s->o, s->act, &r->model), 0);
  }
  g_setenv("PINGPONG_CUDA_PATH", path, TRUE);
  g_setenv("PINGPONG_CUDA_GRAPHS", graphs ? "1" : "0", TRUE);
  pp_backend_options opts = { .kind = PP_BACKEND_CUDA, .completion = completion };
  pp_backend *b = NULL;
  if (pp_backend_cuda_new(&opts, &b, &msg) < 0)
    fail_msg("%s", msg);
  r->engine = pp_engine_new(b, NULL, NULL);
  if (pp_engine_configure(r->engine, r->model, &r->layout, slots, &msg) < 0)
    fail_msg("%s: %s", s->name, msg);
  g_unsetenv("PINGPONG_CUDA_PATH");

  test_rng rng;
  test_rng_seed(&rng, seed ^ (uintptr_t) s);
  const size_t out_bytes = (size_t) r->layout.n * s->o * sizeof(float);
  for (int i = 0; i < FRAMES; i++) {
    r->frames[i] =
        pinned ? pp_host_alloc(r->layout.frame_bytes, true, &msg) : g_malloc(r->layout.frame_bytes);
    r->outputs[i] = pinned ? pp_host_alloc(out_bytes, true, &msg) : g_malloc(out_bytes);
    assert_non_null(r->frames[i]);
    if (s->kind == PP_LAYOUT_TENSOR)
      test_rng_fill_floats(&rng, r->frames[i], r->layout.frame_bytes / 4, -1, 1);
    else
      test_rng_fill_bytes(&rng, r->frames[i], r->layout.frame_bytes);
    test_poison(r->outputs[i], (size_t) r->layout.n * s->o);
  }
}

static void
submit(run *r, int i)
{
  unsigned slot;
  char *msg = NULL;
  assert_int_equal(pp_engine_acquire(r->engine, &slot), 0);
  const pp_job job = {
    .input = r->frames[i],
    .input_pinned = r->pinned,
    .output = r->outputs[i],
    .output_pinned = r->pinned,
  };
  if (pp_engine_submit(r->engine, slot, &job, GINT_TO_POINTER(i + 1), &msg) < 0)
    fail_msg("submit: %s", msg);
}

static void
pop(run *r, int expect)
{
  pp_item item;
  assert_int_equal(pp_engine_pop(r->engine, &item), 0);
  assert_int_equal(item.kind, PP_ITEM_FRAME);
  if (item.status < 0)
    fail_msg("frame failed: %s", item.message);
  assert_int_equal(GPOINTER_TO_INT(item.user), expect + 1);
  pp_engine_release(r->engine, item.ticket);
}

static void
check_outputs(run *r, const char *what)
{
  const size_t count = (size_t) r->layout.n * r->s->o;
  float *x = g_new(float, (size_t) r->layout.n * r->layout.k);
  double *ref = g_new(double, count), *mag = g_new(double, count);
  for (int i = 0; i < FRAMES; i++) {
    pp_cpu_gather(&r->layout, r->frames[i], x);
    test_reference_mlp(r->model, x, r->layout.n, ref, mag);
    const double err = test_scaled_error(r->outputs[i], ref, mag, count);
    if (!(err <= PP_FP32_REL_TOL))
      fail_msg("%s, frame %d: scaled error %.3e > %.0e", what, i, err, PP_FP32_REL_TOL);
  }
  g_free(x), g_free(ref), g_free(mag);
}

static void
teardown_run(run *r)
{
  pp_engine_free(r->engine);
  const size_t out_bytes = (size_t) r->layout.n * r->s->o * sizeof(float);
  for (int i = 0; i < FRAMES; i++) {
    if (r->pinned) {
      pp_host_free(r->frames[i], r->layout.frame_bytes, true);
      pp_host_free(r->outputs[i], out_bytes, true);
    } else {
      g_free(r->frames[i]);
      g_free(r->outputs[i]);
    }
  }
  pp_model_free(r->model);
}

/* When set, what the backend's description must say (e.g. "3 chunks"). */
static const char *expect_detail;

static void
run_all(const shape *s, const char *path, pp_completion completion, bool graphs, bool pinned,
        unsigned slots)
{
  run r;
  setup_run(&r, s, path, completion, graphs, pinned, slots);
  for (int i = 0; i < FRAMES; i++) {
    if (i >= (int) slots)
      pop(&r, i - slots);
    submit(&r, i);
  }
  for (int i = FRAMES - slots; i < FRAMES; i++)
    pop(&r, i);
  g_autofree char *what = g_strdup_printf("%s path=%s %s%s %s slots=%u [%s]", s->name, path,
                                          completion == PP_COMPLETION_HOST_FUNC  ? "host-func"
                                          : completion == PP_COMPLETION_CONSUMER ? "consumer"
                                                                                 : "event-thread",
                                          graphs ? " graphs" : "", pinned ? "pinned" : "pageable",
                                          slots, pp_engine_backend_detail(r.engine));
  check_outputs(&r, what);
  if (expect_detail && !strstr(pp_engine_backend_detail(r.engine), expect_detail))
    fail_msg("%s: expected '%s'", what, expect_detail);
  pp_stats stats;
  pp_engine_get_stats(r.engine, &stats);
  assert_int_equal(stats.frames, FRAMES);
  /* Pinned frames go to the GPU in place; the others through staging. */
  assert_int_equal(stats.staged_inputs, pinned ? 0 : FRAMES);
  assert_true(stats.mlp_mean_us > 0);
  print_message("ok: %s\n", what);
  teardown_run(&r);
}

static void
test_every_path(void **state)
{
  (void) state;
  static const char *const paths[] = { "fused", "own", "own64", "cublas", "small" };
  for (size_t s = 0; s < G_N_ELEMENTS(shapes); s++)
    for (size_t p = 0; p < G_N_ELEMENTS(paths); p++) {
      const bool two_layers = !shapes[s].n_layers && shapes[s].d <= 256;
      if ((p == 0 && !(two_layers && shapes[s].o == 1)) || (p == 4 && !two_layers))
        continue;
      run_all(&shapes[s], paths[p], PP_COMPLETION_HOST_FUNC, true, p % 2 == 0, 2 + p % 2);
    }
}

/* Configuring for `layout` (generated weights, D = 30, O = 1) fails with
 * -EINVAL and a message that contains `expected`. */
static void
expect_configure_error(const pp_frame_layout *layout, const char *expected)
{
  pp_model *model = NULL;
  char *msg = NULL;
  assert_int_equal(pp_model_generate(layout->k, 30, 1, PP_HIDDEN_RELU, &model), 0);
  pp_backend_options opts = { .kind = PP_BACKEND_CUDA, .completion = PP_COMPLETION_CONSUMER };
  pp_backend *b = NULL;
  assert_int_equal(pp_backend_cuda_new(&opts, &b, &msg), 0);
  pp_engine *engine = pp_engine_new(b, NULL, NULL);
  assert_int_equal(pp_engine_configure(engine, model, layout, 2, &msg), -EINVAL);
  if (!strstr(msg, expected))
    fail_msg("configure said '%s', not '%s'", msg, expected);
  g_free(msg);
  pp_engine_free(engine);
  pp_model_free(model);
}

/* Frames in chunks (PINGPONG_CUDA_CHUNKS) on every kernel path and every
 * way of reading X, each against the float64 reference: chunk j's rows
 * must read chunk j's bytes and land in chunk j's results. */
static void
test_chunks(void **state)
{
  (void) state;
  static const struct {
    size_t shape;
    const char *path;
    unsigned chunks;
  } cases[] = {
    { 0, "own", 4 },    { 0, "cublas", 5 }, { 0, "small", 8 },  { 0, "fused", 2 },
    { 1, "own64", 5 },  { 1, "cublas", 5 }, { 2, "fused", 3 },  { 2, "cublas", 6 },
    { 3, "cublas", 2 }, { 3, "own", 5 },    { 4, "own", 2 },    { 4, "cublas", 3 },
    { 5, "cublas", 5 }, { 6, "own", 4 },    { 6, "cublas", 8 },
  };
  /* Quick: rows, patches and tensors; our kernels and cuBLAS. */
  static const size_t quick_cases[] = { 0, 6, 8, 2 };
  static const pp_completion modes[] = { PP_COMPLETION_HOST_FUNC, PP_COMPLETION_EVENT_THREAD,
                                         PP_COMPLETION_CONSUMER };
  for (size_t n = 0; n < (quick ? G_N_ELEMENTS(quick_cases) : G_N_ELEMENTS(cases)); n++) {
    const size_t i = quick ? quick_cases[n] : n;
    g_autofree char *count = g_strdup_printf("%u", cases[i].chunks);
    g_autofree char *detail = g_strdup_printf("%u chunks", cases[i].chunks);
    g_setenv("PINGPONG_CUDA_CHUNKS", count, TRUE);
    expect_detail = detail;
    run_all(&shapes[cases[i].shape], cases[i].path, modes[i % 3], i % 2 == 0, i % 4 < 2, 2 + i % 3);
  }
  expect_detail = NULL;

  /* A count that does not divide the rows of samples says which do. */
  g_setenv("PINGPONG_CUDA_CHUNKS", "2", TRUE);
  pp_frame_layout layout;
  char *msg = NULL;
  assert_int_equal(
      pp_layout_for_video(PP_PIXEL_BGR, 45, 31, 136, PP_MAPPING_PATCHES, 6, &layout, &msg), 0);
  expect_configure_error(&layout,
                         "PINGPONG_CUDA_CHUNKS=2 does not fit these frames; give one of 1, 5");
  g_unsetenv("PINGPONG_CUDA_CHUNKS");
}

/* Frames read in place (PINGPONG_CUDA_ZERO_COPY=1), each against the
 * float64 reference: the whole-MLP kernels read pinned frames and write
 * pinned results over the bus; layer by layer, the first layer reads the
 * frame (our GEMM's gather, cuBLAS's conversion, or cuBLAS on the floats
 * themselves) and the last writes the results (row-dot or a GEMM), in
 * models of one to four layers. Pageable frames go through the mapped
 * staging memory. */
static void
test_zero_copy(void **state)
{
  (void) state;
  static const struct {
    size_t shape;
    const char *path;
  } cases[] = {
    { 0, "small" }, { 0, "fused" },  { 2, "fused" }, { 2, "small" },  { 0, "cublas" }, { 0, "own" },
    { 1, "own64" }, { 3, "cublas" }, { 4, "own" },   { 5, "cublas" }, { 6, "own" },
  };
  static const pp_completion modes[] = { PP_COMPLETION_HOST_FUNC, PP_COMPLETION_EVENT_THREAD,
                                         PP_COMPLETION_CONSUMER };
  g_setenv("PINGPONG_CUDA_ZERO_COPY", "1", TRUE);
  expect_detail = "zero-copy";
  for (size_t i = 0; i < G_N_ELEMENTS(cases); i++)
    for (int pinned = 0; pinned < 2; pinned++)
      run_all(&shapes[cases[i].shape], cases[i].path, modes[(i + pinned) % 3], pinned, pinned,
              1 + i % 3);
  expect_detail = NULL;
  g_unsetenv("PINGPONG_CUDA_ZERO_COPY");
}

static void
test_completion_modes_and_graphs(void **state)
{
  (void) state;
  static const pp_completion modes[] = { PP_COMPLETION_HOST_FUNC, PP_COMPLETION_EVENT_THREAD,
                                         PP_COMPLETION_CONSUMER };
  for (int graphs = 0; graphs < 2; graphs++)
    for (int mode = 0; mode < 3; mode++)
      for (unsigned slots = 1; slots <= 4; slots += 3)
        run_all(&shapes[0], "own", modes[mode], graphs, graphs == mode % 2, slots);
}

static void
test_autotune_picks_a_working_path(void **state)
{
  (void) state;
  for (size_t s = 0; s < G_N_ELEMENTS(shapes); s++)
    run_all(&shapes[s], "", PP_COMPLETION_HOST_FUNC, true, true, 3);
}

/* Flush and teardown while the GPU still works on frames. */
static void
test_flush_and_teardown_in_flight(void **state)
{
  (void) state;
  static const pp_completion modes[] = { PP_COMPLETION_HOST_FUNC, PP_COMPLETION_EVENT_THREAD,
                                         PP_COMPLETION_CONSUMER };
  for (int mode = 0; mode < 3; mode++) {
    run r;
    setup_run(&r, &shapes[3], "own", modes[mode], true, true, 4);
    for (int i = 0; i < 4; i++)
      submit(&r, i);
    pp_engine_set_flushing(r.engine, true);
    pp_engine_flush(r.engine);
    pp_engine_set_flushing(r.engine, false);
    for (int i = 0; i < FRAMES; i++) {
      if (i >= 4)
        pop(&r, i - 4);
      submit(&r, i);
    }
    for (int i = FRAMES - 4; i < FRAMES; i++)
      pop(&r, i);
    check_outputs(&r, "after a flush");
    for (int i = 0; i < 4; i++)
      submit(&r, i); /* left in flight for teardown */
    teardown_run(&r);
  }
}

static void
test_device_errors(void **state)
{
  (void) state;
  pp_backend_options opts = { .kind = PP_BACKEND_CUDA, .device_id = 99 };
  pp_backend *b = NULL;
  char *msg = NULL;
  assert_int_equal(pp_backend_cuda_new(&opts, &b, &msg), -ENODEV);
  assert_non_null(strstr(msg, "device-id is 99"));
  g_free(msg);
  msg = NULL;
  g_setenv("PINGPONG_CUDA_PATH", "fused", TRUE);
  opts.device_id = 0;
  assert_int_equal(pp_backend_cuda_new(&opts, &b, &msg), 0);
  pp_engine *e = pp_engine_new(b, NULL, NULL);
  pp_frame_layout layout;
  pp_model *m = NULL;
  assert_int_equal(pp_layout_for_tensor(8, 8, &layout, &msg), 0);
  assert_int_equal(pp_model_generate(8, 300, 1, PP_HIDDEN_NONE, &m), 0);
  assert_int_equal(pp_engine_configure(e, m, &layout, 2, &msg), -EINVAL); /* D=300 > 256 */
  assert_non_null(strstr(msg, "does not fit"));
  g_free(msg);
  g_unsetenv("PINGPONG_CUDA_PATH");
  pp_engine_free(e);
  pp_model_free(m);
}

int
main(void)
{
  if (!test_cuda_usable())
    return 77;
  seed = test_seed();
  quick = g_getenv("PP_GPU_QUICK") != NULL;
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_every_path),
    cmocka_unit_test(test_completion_modes_and_graphs),
    cmocka_unit_test(test_chunks),
    cmocka_unit_test(test_zero_copy),
    cmocka_unit_test(test_autotune_picks_a_working_path),
    cmocka_unit_test(test_flush_and_teardown_in_flight),
    cmocka_unit_test(test_device_errors),
  };
  const char *filter = g_getenv("PP_TEST_FILTER"); /* one test at a time under racecheck */
  if (filter && *filter)
    cmocka_set_test_filter(filter);
  return cmocka_run_group_tests(tests, NULL, NULL);
}
