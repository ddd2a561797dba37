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

#include "backend_run.h"
#include "testutil.h"

static void
test_every_path(void **state)
{
  (void) state;
  static const char *const paths[] = { "fused", "own", "own64", "cublas", "small", "split" };
  for (size_t s = 0; s < n_shapes; s++)
    for (size_t p = 0; p < G_N_ELEMENTS(paths); p++) {
      const bool two_layers = !shapes[s].n_layers && shapes[s].d <= 256;
      if ((p == 0 && !(two_layers && shapes[s].o == 1)) || (p == 4 && !two_layers) ||
          (p == 5 && shapes[s].kind == PP_LAYOUT_TENSOR))
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
    { 5, "cublas", 5 }, { 6, "own", 4 },    { 6, "cublas", 8 }, { 1, "split", 5 },
    { 2, "split", 3 },  { 4, "split", 2 },
  };
  /* Quick: rows, patches and tensors; our kernels, cuBLAS and split. */
  static const size_t quick_cases[] = { 0, 6, 8, 2, 16 };
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
 * frame (our GEMM's gather, cuBLAS's conversion to floats or split's to
 * BF16, or cuBLAS on the floats themselves) and the last writes the results (row-dot or a GEMM), in
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
    { 0, "small" }, { 0, "fused" }, { 2, "fused" },  { 2, "small" }, { 0, "cublas" },
    { 0, "own" },   { 1, "own64" }, { 3, "cublas" }, { 4, "own" },   { 5, "cublas" },
    { 6, "own" },   { 2, "split" }, { 6, "split" },
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
  for (size_t s = 0; s < n_shapes; s++)
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
