/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The engine on the CUDA backend: every MLP path, both completion modes,
 * with and without CUDA graphs, pinned and unpinned frames, against the
 * float64 reference; staging counted only for unpinned frames; flush and
 * teardown with work in flight on the GPU; plans printed, forced back and
 * cached. Exits 77 without a device. */
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
#include "cuda_plan.h"
#include "cuda_timing.h"
#include "testutil.h"

static const pp_completion modes[] = { PP_COMPLETION_EVENT_THREAD, PP_COMPLETION_CONSUMER };

static void
test_every_path(void **state)
{
  (void) state;
  static const char *const paths[] = { "fused", "own", "own64", "cublas", "small", "split" };
  for (size_t s = 0; s < n_shapes; s++)
    for (size_t p = 0; p < G_N_ELEMENTS(paths); p++) {
      const bool two_layers = !shapes[s].n_layers && shapes[s].d <= 256;
      if ((p == 0 && !(two_layers && shapes[s].o == 1)) || (p == 4 && !two_layers))
        continue;
      run_all(&shapes[s], paths[p], "frames=whole", modes[p % 2], p % 2 == 0, 2 + p % 2);
    }
}

/* Configuring for `layout` (generated weights, D hidden, O = 1) fails with
 * -EINVAL and a message that contains `expected`. */
static void
expect_error_of(const pp_frame_layout *layout, uint32_t d, const char *forced, const char *expected)
{
  pp_model *model = NULL;
  char *msg = NULL;
  assert_int_equal(pp_model_generate(layout->k, d, 1, PP_HIDDEN_RELU, &model), 0);
  pp_backend_options opts = { .kind = PP_BACKEND_CUDA,
                              .completion = PP_COMPLETION_CONSUMER,
                              .precision = precision };
  pp_backend *b = NULL;
  assert_int_equal(pp_backend_cuda_new(&opts, &b, &msg), 0);
  pp_engine *engine = pp_engine_new(b, NULL, NULL);
  const pp_plan_request request = { .forced = forced, .quick = quick };
  assert_int_equal(pp_engine_configure(engine, model, layout, 2, &request, &msg), -EINVAL);
  if (!strstr(msg, expected))
    fail_msg("configure said '%s', not '%s'", msg, expected);
  g_clear_pointer(&msg, g_free);
  pp_engine_free(engine);
  pp_model_free(model);
}

/* The same for D = 30. */
static void
expect_configure_error(const pp_frame_layout *layout, const char *forced, const char *expected)
{
  expect_error_of(layout, 30, forced, expected);
}

/* Frames in chunks on every kernel path and every way of reading X, each
 * against the float64 reference: chunk j's rows must read chunk j's bytes
 * and land in chunk j's results. */
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
  for (size_t n = 0; n < (quick ? G_N_ELEMENTS(quick_cases) : G_N_ELEMENTS(cases)); n++) {
    const size_t i = quick ? quick_cases[n] : n;
    g_autofree char *extra =
        g_strdup_printf("frames=chunks:%u graphs=%s", cases[i].chunks, i % 2 == 0 ? "on" : "off");
    g_autofree char *detail = g_strdup_printf("frames=chunks:%u", cases[i].chunks);
    expect_detail = detail;
    run_all(&shapes[cases[i].shape], cases[i].path, extra, modes[i % 2], i % 4 < 2, 2 + i % 3);
  }
  expect_detail = NULL;

  /* A count that does not divide the rows of samples says which do. */
  pp_frame_layout layout;
  char *msg = NULL;
  assert_int_equal(
      pp_layout_for_video(PP_PIXEL_BGR, 45, 31, 136, PP_MAPPING_PATCHES, 6, &layout, &msg), 0);
  expect_configure_error(&layout, "frames=chunks:2",
                         "frames=chunks:2 does not fit these frames; give whole, chunks:5");
}

/* Frames read in place, each against the float64 reference: the whole-MLP
 * kernels read pinned frames and write pinned results over the bus; layer
 * by layer, the first layer reads the frame (our GEMM's gather, cuBLAS's
 * conversion to floats or split's to TF32 pieces, or cuBLAS on the floats
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
    { 0, "small" }, { 0, "fused" }, { 2, "fused" },  { 2, "small" }, { 0, "cublas" },
    { 0, "own" },   { 1, "own64" }, { 3, "cublas" }, { 4, "own" },   { 5, "cublas" },
    { 6, "own" },   { 2, "split" }, { 6, "split" },
  };
  expect_detail = "frames=in-place";
  for (size_t i = 0; i < G_N_ELEMENTS(cases); i++)
    for (int pinned = 0; pinned < 2; pinned++)
      run_all(&shapes[cases[i].shape], cases[i].path,
              pinned ? "frames=in-place graphs=on" : "frames=in-place graphs=off signal=off",
              modes[(i + pinned) % 2], pinned, 1 + i % 3);
  expect_detail = NULL;
}

/* Hidden layers of at most 64 (narrow's kind of model), which the warp
 * kernel takes: four layers, odd widths, a frame of odd size. */
static const shape narrow = { "bgr patches 45x31 p=6 108-64-relu-19-gelu-64-silu-1",
                              PP_LAYOUT_PATCHES,
                              PP_PIXEL_BGR,
                              45,
                              31,
                              6,
                              0,
                              1,
                              PP_HIDDEN_NONE,
                              4,
                              { 64, 19, 64, 1 },
                              { PP_ACT_RELU, PP_ACT_GELU, PP_ACT_SILU, PP_ACT_IDENTITY } };

/* bf16 and fp16 on every shape, tuned, layer by layer on cuBLAS and (one
 * output) in the wide kernel, and in the warp kernel where the hidden
 * layers are at most 64 wide, whole frames, in chunks and in place:
 * against float64 and the CPU backend at the same precision
 * (check_outputs); tf32 and fp32 in the wide kernel against float64. */
static void
test_precisions(void **state)
{
  (void) state;
  static const pp_precision rounded[] = { PP_PRECISION_BF16, PP_PRECISION_FP16 };
  for (size_t p = 0; p < G_N_ELEMENTS(rounded); p++) {
    precision = rounded[p];
    for (size_t s = 0; s < n_shapes; s++) {
      run_all(&shapes[s], "", NULL, modes[s % 2], s % 2 == 0, 2);
      if (quick && s > 0)
        continue;
      run_all(&shapes[s], "cublas", "frames=in-place graphs=on", modes[s % 2], true, 1 + s % 2);
    }
    run_all(&shapes[0], "cublas", "frames=chunks:4 graphs=off", modes[0], false, 3);
    run_all(&shapes[4], "cublas", "frames=chunks:2 graphs=on", modes[1], true, 2);
    /* The wide kernel on the shapes of one output: whole frames, read in
     * place, in chunks. */
    run_all(&shapes[0], "wide", "frames=whole graphs=off", modes[0], false, 2);
    run_all(&shapes[2], "wide", "frames=in-place graphs=on", modes[1], true, 1);
    run_all(&shapes[4], "wide", "frames=chunks:2 graphs=on", modes[0], true, 3);
    /* The warp kernel: tuned (it competes), forced on whole frames, in
     * place and in chunks; the wide kernel on the same model. */
    run_all(&narrow, "", NULL, modes[1], false, 2);
    run_all(&narrow, "warp", "frames=whole graphs=off", modes[0], false, 2);
    run_all(&narrow, "warp", "frames=in-place graphs=on", modes[1], true, 1);
    run_all(&narrow, "warp", "frames=chunks:5 graphs=on", modes[0], true, 3);
    run_all(&narrow, "wide", "frames=whole graphs=on", modes[1], true, 2);
  }
  /* The wide kernel in floats, TF32 and exact: whole frames, in place, in
   * chunks; on narrow's model the warp kernel too, tuned and forced (its
   * rows of floats: narrow's patches are bytes the reader gathers). */
  static const pp_precision floats[] = { PP_PRECISION_TF32, PP_PRECISION_FP32 };
  for (size_t p = 0; p < G_N_ELEMENTS(floats); p++) {
    precision = floats[p];
    run_all(&shapes[0], "wide", "frames=whole graphs=off", modes[0], false, 2);
    run_all(&shapes[2], "wide", "frames=in-place graphs=on", modes[1], true, 1);
    run_all(&shapes[4], "wide", "frames=chunks:2 graphs=on", modes[0], true, 3);
    run_all(&narrow, "wide", "frames=whole graphs=on", modes[1], true, 2);
    run_all(&narrow, "", NULL, modes[1], false, 2);
    run_all(&narrow, "warp", "frames=whole graphs=off", modes[0], false, 2);
    run_all(&narrow, "warp", "frames=in-place graphs=on", modes[1], true, 1);
    run_all(&narrow, "warp", "frames=chunks:5 graphs=on", modes[0], true, 3);
  }
  precision = PP_PRECISION_FP32;
  /* Our own kernels read float32 only: the plan says so. */
  pp_frame_layout layout;
  char *msg = NULL;
  assert_int_equal(pp_layout_for_tensor(8, 8, &layout, &msg), 0);
  precision = PP_PRECISION_BF16;
  expect_configure_error(&layout, "kernels=own+rowdot", "layer 0 cannot run on own");
  precision = PP_PRECISION_FP32;
  /* The warp kernel takes hidden layers of at most 64, not 65. */
  pp_frame_layout rows;
  assert_int_equal(pp_layout_for_video(PP_PIXEL_GRAY8, 40, 30, 40, PP_MAPPING_ROWS, 0, &rows, &msg),
                   0);
  expect_error_of(&rows, 65, "kernels=warp", "kernels=warp does not fit this model");
}

static int
reset_precision(void **state)
{
  (void) state;
  precision = PP_PRECISION_FP32;
  return 0;
}

static void
test_completion_modes_and_graphs(void **state)
{
  (void) state;
  for (int graphs = 0; graphs < 2; graphs++)
    for (int mode = 0; mode < 2; mode++)
      for (unsigned slots = 1; slots <= 4; slots += 3)
        run_all(&shapes[0], "own", graphs ? "graphs=on" : "graphs=off", modes[mode],
                graphs == mode % 2, slots);
}

/* Another thread synchronizing the whole context (NVDEC's decoder does,
 * for every frame, in the pipeline's context cudamlp shares) while the
 * backend plans and runs: with no_graphs, as cudamlp asks for frames in
 * CUDA memory, no graph is captured (a capture open at such a moment is
 * broken, and the driver has crashed in that race), the plan says
 * graphs=off, and the frames come out right. */
static gpointer
synchronize_context(gpointer data)
{
  gint *stop = data;
  if (cudaSetDevice(0) != cudaSuccess)
    return NULL;
  while (!g_atomic_int_get(stop))
    cudaDeviceSynchronize();
  return NULL;
}

static void
test_no_graphs_beside_context_sync(void **state)
{
  (void) state;
  gint stop = 0;
  GThread *neighbour = g_thread_new("ctx-sync", synchronize_context, &stop);
  no_graphs = true;
  expect_detail = "graphs=off";
  for (int i = 0; i < (quick ? 1 : 4); i++)
    run_all(&shapes[i % 2], i < 2 ? "" : "cublas", NULL, modes[i % 2], true, 2);
  g_atomic_int_set(&stop, 1);
  g_thread_join(neighbour);
}

static int
reset_graphs(void **state)
{
  (void) state;
  no_graphs = false;
  expect_detail = NULL;
  return 0;
}

static void
test_autotune_picks_a_working_path(void **state)
{
  (void) state;
  for (size_t s = 0; s < n_shapes; s++)
    run_all(&shapes[s], "", NULL, modes[s % 2], true, 3);
}

/* FRAMES frames, two in flight, checked against the reference. */
static void
run_two_in_flight(run *r, const char *what)
{
  for (int f = 0; f < FRAMES; f++) {
    if (f >= 2)
      pop(r, f - 2);
    submit(r, f);
  }
  pop(r, FRAMES - 2);
  pop(r, FRAMES - 1);
  check_outputs(r, what);
}

/* The plan as a line: tuned, printed, forced back from the line (the same
 * plan: the same line), and given as a cached line (used, not tuned); a
 * cached line cuBLAS cannot run (an algorithm it no longer has) falls back
 * to tuning and says why. Every run against the float64 reference. */
static void
test_plan_lines(void **state)
{
  (void) state;
  for (size_t i = 0; i < n_shapes; i++) {
    const shape *s = &shapes[i];
    run r;
    setup_run(&r, s, "", NULL, PP_COMPLETION_CONSUMER, true, 2);
    pp_plan_info info;
    assert_true(pp_engine_plan_info(r.engine, &info));
    assert_int_equal(info.source, PP_PLAN_TUNED);
    g_autofree char *tuned = g_strdup(info.line);
    print_message("%s: %s (configure %.1f ms: open %.1f, library %.1f, alloc %.1f, weights %.1f, "
                  "plan %.1f, graphs %.1f)\n",
                  s->name, tuned, info.startup.configure_ms, info.startup.open_ms,
                  info.startup.library_ms, info.startup.alloc_ms, info.startup.weights_ms,
                  info.startup.plan_ms, info.startup.graphs_ms);
    char *msg = NULL;
    /* Forced from its own line: the same plan. */
    const pp_plan_request forced = { .forced = tuned };
    if (pp_engine_configure(r.engine, r.model, &r.layout, 2, &forced, &msg) < 0)
      fail_msg("%s: forcing %s: %s", s->name, tuned, msg);
    assert_true(pp_engine_plan_info(r.engine, &info));
    assert_string_equal(info.line, tuned);
    assert_int_equal(info.source, PP_PLAN_FORCED);
    /* Cached: used as it is, the plan step a check. */
    const pp_plan_request cached = { .cached = tuned };
    assert_int_equal(pp_engine_configure(r.engine, r.model, &r.layout, 2, &cached, &msg), 0);
    assert_true(pp_engine_plan_info(r.engine, &info));
    assert_int_equal(info.source, PP_PLAN_CACHED);
    assert_string_equal(info.line, tuned);
    print_message("%s: cached configure %.1f ms (plan %.1f)\n", s->name, info.startup.configure_ms,
                  info.startup.plan_ms);
    run_two_in_flight(&r, "a cached plan");
    teardown_run(&r);
  }
  /* A cached line whose cuBLAS algorithm this cuBLAS lacks: tuned again. */
  run r;
  setup_run(&r, &shapes[0], "cublas", "frames=whole", PP_COMPLETION_CONSUMER, true, 2);
  pp_plan_info info;
  assert_true(pp_engine_plan_info(r.engine, &info));
  g_autofree char *stale = g_strdup_printf("%s gemm0=id100000", info.line);
  char *msg = NULL;
  const pp_plan_request cached = { .cached = stale };
  assert_int_equal(pp_engine_configure(r.engine, r.model, &r.layout, 2, &cached, &msg), 0);
  assert_true(pp_engine_plan_info(r.engine, &info));
  assert_int_equal(info.source, PP_PLAN_TUNED);
  assert_non_null(info.refused);
  print_message("a stale cached plan: %s\n", info.refused);
  run_two_in_flight(&r, "after a stale cached plan");
  teardown_run(&r);
}

/* A plan is a value: timing every kernel path beside it (the bench's
 * per-path line, which makes and times each candidate's cuBLAS GEMMs on
 * the backend's executor) leaves its frames' results bit for bit, in
 * whole frames and in chunks, each run also against the float64
 * reference. */
static void
test_paths_timed_beside_a_plan(void **state)
{
  (void) state;
  /* The own kernels' plan keeps no cuBLAS workspace: timing cuBLAS beside
   * it lends slot 0 one. */
  static const char *const paths[] = { "cublas", "cublas", "own" };
  static const char *const extras[] = { "frames=whole", "frames=chunks:5", "frames=whole" };
  for (size_t c = 0; c < G_N_ELEMENTS(extras); c++) {
    run r;
    setup_run(&r, &shapes[0], paths[c], extras[c], PP_COMPLETION_CONSUMER, true, 2);
    run_two_in_flight(&r, "before the paths were timed");
    const size_t count = (size_t) r.layout.n * r.s->o;
    float *before[FRAMES];
    for (int f = 0; f < FRAMES; f++)
      before[f] = g_memdup2(r.outputs[f], count * sizeof(float));
    pp_cuda_path_time times[PP_CUDA_MAX_PATH_TIMES];
    unsigned n = 0;
    char *msg = NULL;
    if (pp_cuda_time_paths(r.backend, 3, times, PP_CUDA_MAX_PATH_TIMES, &n, &msg) < 0)
      fail_msg("timing the paths: %s", msg);
    assert_true(n >= 2); /* own and cublas at least */
    for (int f = 0; f < FRAMES; f++)
      test_poison(r.outputs[f], count);
    run_two_in_flight(&r, "after the paths were timed");
    for (int f = 0; f < FRAMES; f++) {
      assert_memory_equal(r.outputs[f], before[f], count * sizeof(float));
      g_free(before[f]);
    }
    teardown_run(&r);
  }
}

/* Without graphs a whole-MLP kernel that fits is the plan (one launch a
 * frame for the submitting thread), whatever the layers' time. */
static void
test_no_graphs_take_one_kernel(void **state)
{
  (void) state;
  no_graphs = true;
  for (size_t i = 0; i < n_shapes; i++) {
    if (shapes[i].n_layers || shapes[i].o != 1 || shapes[i].d > 256)
      continue; /* the two-layer shapes of one output, which fused runs */
    run r;
    setup_run(&r, &shapes[i], "", NULL, PP_COMPLETION_CONSUMER, true, 2);
    pp_plan_info info;
    assert_true(pp_engine_plan_info(r.engine, &info));
    if (!strstr(info.line, "kernels=fused") && !strstr(info.line, "kernels=small"))
      fail_msg("%s without graphs: %s", shapes[i].name, info.line);
    print_message("%s without graphs: %s\n", shapes[i].name, info.line);
    run_two_in_flight(&r, "a whole-MLP kernel without graphs");
    teardown_run(&r);
  }
}

/* Flush and teardown while the GPU still works on frames. */
static void
test_flush_and_teardown_in_flight(void **state)
{
  (void) state;
  for (int mode = 0; mode < 2; mode++) {
    run r;
    setup_run(&r, &shapes[3], "own", NULL, modes[mode], true, 4);
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
  pp_backend_options opts = { .kind = PP_BACKEND_CUDA,
                              .device_id = 99,
                              .completion = PP_COMPLETION_CONSUMER };
  pp_backend *b = NULL;
  char *msg = NULL;
  assert_int_equal(pp_backend_cuda_new(&opts, &b, &msg), -ENODEV);
  assert_non_null(strstr(msg, "device-id is 99"));
  g_clear_pointer(&msg, g_free);
  msg = NULL;
  pp_frame_layout layout;
  assert_int_equal(pp_layout_for_tensor(8, 8, &layout, &msg), 0);
  expect_configure_error(&layout, "kernels=own+own+own", "names 3 layers for a model of 2");
  expect_configure_error(&layout, "kernels=own+split:2",
                         "layer 1 cannot run on split"); /* a first layer's path */
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
    cmocka_unit_test_teardown(test_precisions, reset_precision),
    cmocka_unit_test_teardown(test_no_graphs_beside_context_sync, reset_graphs),
    cmocka_unit_test_teardown(test_no_graphs_take_one_kernel, reset_graphs),
    cmocka_unit_test(test_autotune_picks_a_working_path),
    cmocka_unit_test(test_plan_lines),
    cmocka_unit_test(test_paths_timed_beside_a_plan),
    cmocka_unit_test(test_flush_and_teardown_in_flight),
    cmocka_unit_test(test_device_errors),
  };
  const char *filter = g_getenv("PP_TEST_FILTER"); /* one test at a time under racecheck */
  if (filter && *filter)
    cmocka_set_test_filter(filter);
  return cmocka_run_group_tests(tests, NULL, NULL);
}
