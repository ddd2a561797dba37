/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What the CUDA backend's GPU tests share (backend_run.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <glib.h>
#include <string.h>

#include "backend_run.h"
#include "cpu_mlp.h"
#include "host_memory.h"
#include "testutil.h"

uint64_t seed;
bool quick;
bool no_graphs;
pp_precision precision = PP_PRECISION_FP32;

const shape shapes[] = {
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
const size_t n_shapes = G_N_ELEMENTS(shapes);

char *
kernels_line(const pp_model *m, const char *path)
{
  if (g_str_equal(path, "fused") || g_str_equal(path, "small") || g_str_equal(path, "wide") ||
      g_str_equal(path, "warp"))
    return g_strdup_printf("kernels=%s", path);
  GString *line = g_string_new("kernels=");
  for (unsigned i = 0; i < m->n_layers; i++) {
    const bool rowdot = i > 0 && i + 1 == m->n_layers && m->layers[i].out <= 32;
    const char *own = g_str_equal(path, "split") ? (i == 0 ? "split:2" : "cublas") : path;
    g_string_append_printf(line, "%s%s", i ? "+" : "", rowdot ? "rowdot" : own);
  }
  return g_string_free(line, FALSE);
}

void
setup_run(run *r, const shape *s, const char *path, const char *extra, pp_completion completion,
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
  g_autofree char *kernels = *path ? kernels_line(r->model, path) : g_strdup("");
  g_autofree char *line = g_strdup_printf("%s %s", kernels, extra ? extra : "");
  pp_backend_options opts = { .kind = PP_BACKEND_CUDA,
                              .completion = completion,
                              .precision = precision };
  pp_backend *b = NULL;
  if (pp_backend_cuda_new(&opts, &b, &msg) < 0)
    fail_msg("%s", msg);
  r->backend = b;
  r->engine = pp_engine_new(b, NULL, NULL);
  /* Quick (compute-sanitizer): each choice the plan leaves open timed once. */
  const pp_plan_request request = { .forced = g_strstrip(line)[0] ? line : NULL,
                                    .quick = quick,
                                    .no_graphs = no_graphs };
  if (pp_engine_configure(r->engine, r->model, &r->layout, slots, &request, &msg) < 0)
    fail_msg("%s [%s]: %s", s->name, line, msg);

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

void
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

void
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

/* At bf16 or fp16: each frame against float64 within the precision's
 * bound, and against the CPU backend at that precision, which rounds
 * alike: several times closer to it than it is to float64. */
static void
check_rounded(run *r, const char *what)
{
  const size_t count = (size_t) r->layout.n * r->s->o;
  const double tol = test_precision_tol(precision);
  float *cpu[FRAMES];
  for (int i = 0; i < FRAMES; i++)
    cpu[i] = g_new(float, count);
  const pp_backend_options opts = { .kind = PP_BACKEND_CPU, .precision = precision };
  test_run_frames(&opts, r->model, &r->layout, r->frames, cpu, FRAMES);
  float *x = g_new(float, (size_t) r->layout.n * r->layout.k);
  double *ref = g_new(double, count), *mag = g_new(double, count), *cpu_ref = g_new(double, count);
  double worst[4] = { 0 };
  for (int i = 0; i < FRAMES; i++) {
    pp_cpu_gather(&r->layout, r->frames[i], x);
    test_reference_mlp(r->model, x, r->layout.n, ref, mag);
    for (size_t j = 0; j < count; j++)
      cpu_ref[j] = cpu[i][j];
    const double e[4] = {
      test_relative_error(r->outputs[i], ref, count),
      test_scaled_error(r->outputs[i], ref, mag, count),
      test_relative_error(r->outputs[i], cpu_ref, count),
      test_relative_error(cpu[i], ref, count),
    };
    for (int j = 0; j < 4; j++)
      worst[j] = MAX(worst[j], e[j]);
    const double same_tol = PP_SAME_PRECISION_RATIO * e[3] + 1e-7;
    if (!(e[1] <= tol))
      fail_msg("%s, frame %d: scaled error %.3e > %.0e", what, i, e[1], tol);
    if (!(e[2] <= same_tol))
      fail_msg("%s, frame %d: %.3e from the CPU's %s, which is %.3e from float64", what, i, e[2],
               pp_precision_name(precision), e[3]);
    g_free(cpu[i]);
  }
  print_message("%s: %s relative %.2e scaled %.2e; from the CPU's %.2e, the CPU's own %.2e\n", what,
                pp_precision_name(precision), worst[0], worst[1], worst[2], worst[3]);
  g_free(x), g_free(ref), g_free(mag), g_free(cpu_ref);
}

void
check_outputs(run *r, const char *what)
{
  if (pp_precision_dtype(precision) != PP_DTYPE_F32) {
    check_rounded(r, what);
    return;
  }
  const size_t count = (size_t) r->layout.n * r->s->o;
  float *x = g_new(float, (size_t) r->layout.n * r->layout.k);
  double *ref = g_new(double, count), *mag = g_new(double, count);
  for (int i = 0; i < FRAMES; i++) {
    pp_cpu_gather(&r->layout, r->frames[i], x);
    test_reference_mlp(r->model, x, r->layout.n, ref, mag);
    const double err = test_scaled_error(r->outputs[i], ref, mag, count);
    const double tol = test_precision_tol(precision);
    if (!(err <= tol))
      fail_msg("%s, frame %d: scaled error %.3e > %.0e", what, i, err, tol);
  }
  g_free(x), g_free(ref), g_free(mag);
}

void
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

const char *expect_detail;

void
run_all(const shape *s, const char *path, const char *extra, pp_completion completion, bool pinned,
        unsigned slots)
{
  run r;
  setup_run(&r, s, path, extra, completion, pinned, slots);
  for (int i = 0; i < FRAMES; i++) {
    if (i >= (int) slots)
      pop(&r, i - slots);
    submit(&r, i);
  }
  for (int i = FRAMES - slots; i < FRAMES; i++)
    pop(&r, i);
  g_autofree char *what =
      g_strdup_printf("%s path=%s %s %s %s slots=%u [%s]", s->name, path, extra ? extra : "",
                      completion == PP_COMPLETION_CONSUMER ? "consumer" : "event-thread",
                      pinned ? "pinned" : "pageable", slots, pp_engine_backend_detail(r.engine));
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
