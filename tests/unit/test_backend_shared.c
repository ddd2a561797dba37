// SPDX-License-Identifier: LGPL-2.1-or-later
/* Streams sharing one backend (shared=true), on the CPU backend: lanes with
 * the same model, layout and slots run on one backend, each stream's
 * frames come out in its own order with its own results (against the
 * float64 reference), lanes with another model get a backend of their
 * own, a lane alone reconfigures its backend in place, the last lane
 * gone closes it, and a stream whose consumer does not pop holds no other
 * stream back, even with results held for finish (every frame timed). With
 * max-batch, the same with several streams' frames in one job: batches do
 * form when the streams outrun the slots, and every frame still comes out
 * right, in its stream's order. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <glib.h>
#include <string.h>

#include "backend_shared.h"
#include "engine.h"
#include "frame.h"
#include "testutil.h"

static uint64_t seed;

enum { W = 24, H = 10, LANES = 4, FRAMES = 40 };

/* Image rows of the streams' frames: H, or more where a frame must take a
 * while. */
static uint32_t frame_rows = H;

typedef struct {
  pp_engine *engine;
  pp_model *model;
  pp_frame_layout layout;
  uint8_t *frames[FRAMES];
  float *outputs[FRAMES];
  /* Before the consumer pops its first frame it waits for this (NULL: no
   * wait). */
  gint *go;
  gint done; /* every frame popped */
  int failures;
  /* Frames that came out failed (the backend's fault injection), which
   * only then is not a failure of the test. */
  bool allow_failed;
  bool failed[FRAMES];
} stream;

static pp_backend_options
cpu_options(bool timed, unsigned max_batch)
{
  return (pp_backend_options){ .kind = PP_BACKEND_CPU,
                               .time_every_frame = timed,
                               .max_batch = max_batch };
}

static void
census(unsigned want_backends, unsigned want_lanes)
{
  unsigned backends, lanes;
  pp_backend_shared_census(&backends, &lanes);
  assert_int_equal(backends, want_backends);
  assert_int_equal(lanes, want_lanes);
}

static void
stream_open(stream *s, const pp_backend_options *opts, uint32_t hidden, unsigned slots,
            test_rng *rng)
{
  memset(s, 0, sizeof *s);
  pp_backend *lane = NULL;
  char *msg = NULL;
  assert_int_equal(pp_backend_open_shared(opts, &lane, NULL, &msg), 0);
  assert_string_equal(lane->ops->name, "cpu");
  s->engine = pp_engine_new(lane, NULL, NULL);
  assert_int_equal(
      pp_layout_for_video(PP_PIXEL_GRAY8, W, frame_rows, W, PP_MAPPING_ROWS, 0, &s->layout, &msg),
      0);
  assert_int_equal(pp_model_generate(s->layout.k, hidden, 2, PP_HIDDEN_RELU, &s->model), 0);
  assert_int_equal(pp_engine_configure(s->engine, s->model, &s->layout, slots, NULL, &msg), 0);
  for (int i = 0; i < FRAMES; i++) {
    s->frames[i] = g_malloc(s->layout.frame_bytes);
    test_rng_fill_bytes(rng, s->frames[i], s->layout.frame_bytes);
    s->outputs[i] = g_new(float, (size_t) s->layout.n * s->model->o);
    test_poison(s->outputs[i], (size_t) s->layout.n * s->model->o);
  }
}

/* Each frame against the float64 reference, X straight from the bytes. */
static void
stream_check(stream *s)
{
  const size_t n_out = (size_t) s->layout.n * s->model->o;
  float *x = g_new(float, (size_t) s->layout.n * s->layout.k);
  double *ref = g_new(double, n_out), *mag = g_new(double, n_out);
  for (int i = 0; i < FRAMES; i++) {
    if (s->failed[i])
      continue;
    for (size_t j = 0; j < (size_t) s->layout.n * s->layout.k; j++)
      x[j] = s->frames[i][j] / 255.0f;
    test_reference_mlp(s->model, x, s->layout.n, ref, mag);
    const double err = test_scaled_error(s->outputs[i], ref, mag, n_out);
    if (!(err <= PP_FP32_REL_TOL))
      fail_msg("frame %d: scaled error %.3e > %.0e", i, err, PP_FP32_REL_TOL);
  }
  g_free(x), g_free(ref), g_free(mag);
}

static void
stream_close(stream *s)
{
  pp_engine_free(s->engine);
  pp_model_free(s->model);
  for (int i = 0; i < FRAMES; i++) {
    g_free(s->frames[i]);
    g_free(s->outputs[i]);
  }
}

/* Every stream's results checked, every stream closed: no backend left. */
static void
check_and_close(stream *streams, unsigned n)
{
  for (unsigned i = 0; i < n; i++) {
    stream_check(&streams[i]);
    stream_close(&streams[i]);
  }
  census(0, 0);
}

static gpointer
produce(gpointer data)
{
  stream *s = data;
  for (int i = 0; i < FRAMES; i++) {
    unsigned ticket;
    char *msg = NULL;
    const pp_job job = { .input = s->frames[i], .output = s->outputs[i] };
    if (pp_engine_acquire(s->engine, &ticket) < 0 ||
        pp_engine_submit(s->engine, ticket, &job, GINT_TO_POINTER(i + 1), &msg) < 0) {
      g_free(msg);
      g_atomic_int_inc(&s->failures);
      return NULL;
    }
  }
  return NULL;
}

static gpointer
consume(gpointer data)
{
  stream *s = data;
  while (s->go && !g_atomic_int_get(s->go))
    g_usleep(1000);
  for (int i = 0; i < FRAMES; i++) {
    pp_item item;
    /* Its own frames only, in its own order. */
    if (pp_engine_pop(s->engine, &item) < 0 || GPOINTER_TO_INT(item.user) != i + 1)
      g_atomic_int_inc(&s->failures);
    else if (item.status < 0 && s->allow_failed)
      s->failed[i] = true;
    else if (item.status < 0)
      g_atomic_int_inc(&s->failures);
    pp_engine_release(s->engine, item.ticket);
  }
  g_atomic_int_set(&s->done, 1);
  return NULL;
}

static void
run_streams(stream *streams, unsigned n)
{
  GThread *threads[2 * LANES];
  for (unsigned i = 0; i < n; i++) {
    threads[2 * i] = g_thread_new("produce", produce, &streams[i]);
    threads[2 * i + 1] = g_thread_new("consume", consume, &streams[i]);
  }
  for (unsigned i = 0; i < 2 * n; i++)
    g_thread_join(threads[i]);
  for (unsigned i = 0; i < n; i++)
    assert_int_equal(streams[i].failures, 0);
}

/* Four streams at once on one backend of 2 slots, each its own results. */
static void
test_lanes_share_one_backend(void **state)
{
  (void) state;
  test_rng rng;
  test_rng_seed(&rng, seed);
  for (int run = 0; run < 4; run++) {
    const bool timed = run % 2;
    const pp_backend_options opts = cpu_options(timed, run < 2 ? 1 : 4);
    stream streams[LANES];
    for (unsigned i = 0; i < LANES; i++)
      stream_open(&streams[i], &opts, 7, 2, &rng);
    census(1, LANES);
    run_streams(streams, LANES);
    check_and_close(streams, LANES);
  }
}

/* Another model (or slot count) runs on a backend of its own; a lane that
 * comes to another's configuration joins it; a lane alone on its backend
 * is reconfigured in place. */
static void
test_other_configurations(void **state)
{
  (void) state;
  test_rng rng;
  test_rng_seed(&rng, seed + 1);
  const pp_backend_options opts = cpu_options(false, 1);
  stream a, b, c;
  stream_open(&a, &opts, 7, 2, &rng);
  stream_open(&b, &opts, 9, 2, &rng);
  census(2, 2);
  stream_open(&c, &opts, 7, 3, &rng);
  census(3, 3);
  /* c comes to a's configuration: joins a's backend, its own closes. */
  char *msg = NULL;
  assert_int_equal(pp_engine_configure(c.engine, c.model, &c.layout, 2, NULL, &msg), 0);
  census(2, 3);
  /* b, alone on its backend, is reconfigured in place. */
  assert_int_equal(pp_engine_configure(b.engine, b.model, &b.layout, 3, NULL, &msg), 0);
  census(2, 3);
  stream all[] = { a, b, c };
  run_streams(all, 3);
  check_and_close(all, 3);
}

/* Every frame timed, so each result is held for finish: a stream whose
 * consumer has not popped yet still lets the other finish all of its
 * frames on the same two slots. */
static void
stalled_stream_holds_none_back(unsigned max_batch)
{
  test_rng rng;
  test_rng_seed(&rng, seed + 2);
  const pp_backend_options opts = cpu_options(true, max_batch);
  gint go = 0;
  stream streams[2];
  for (unsigned i = 0; i < 2; i++)
    stream_open(&streams[i], &opts, 5, 2, &rng);
  census(1, 2);
  streams[0].go = &go;
  GThread *threads[4];
  for (unsigned i = 0; i < 2; i++) {
    threads[2 * i] = g_thread_new("produce", produce, &streams[i]);
    threads[2 * i + 1] = g_thread_new("consume", consume, &streams[i]);
  }
  /* Stream 1 ends while stream 0's consumer waits (at most 20 s). */
  for (int waited = 0; waited < 20000 && !g_atomic_int_get(&streams[1].done); waited++)
    g_usleep(1000);
  const bool other_done = g_atomic_int_get(&streams[1].done);
  g_atomic_int_set(&go, 1);
  for (unsigned i = 0; i < 4; i++)
    g_thread_join(threads[i]);
  assert_true(other_done);
  for (unsigned i = 0; i < 2; i++)
    assert_int_equal(streams[i].failures, 0);
  check_and_close(streams, 2);
}

static void
test_stalled_stream_holds_none_back(void **state)
{
  (void) state;
  stalled_stream_holds_none_back(1);
  stalled_stream_holds_none_back(4);
}

/* Four streams on one slot, frames that take a while (256 hidden): while
 * the slot runs one job the others' frames queue, so jobs hold several
 * frames, of several streams, and each stream's results stay its own.
 * With batches of 2 the queue holds 2 of the 4 streams' frames: the
 * others wait in submit for room. */
static void
batches_form(unsigned max_batch)
{
  test_rng rng;
  test_rng_seed(&rng, seed + 3);
  const pp_backend_options opts = cpu_options(false, max_batch);
  stream streams[LANES];
  frame_rows = 400;
  for (unsigned i = 0; i < LANES; i++)
    stream_open(&streams[i], &opts, 256, 1, &rng);
  frame_rows = H;
  census(1, LANES);
  /* One frame's samples back to back: rows of GRAY8 stack. */
  g_autofree char *said = g_strdup_printf("batches of up to %u", max_batch);
  assert_non_null(strstr(pp_engine_backend_detail(streams[0].engine), said));
  run_streams(streams, LANES);
  const double mean = pp_engine_batch_mean(streams[0].engine);
  print_message("max-batch %u: frames a job %.2f\n", max_batch, mean);
  /* How full depends on the threads' timing (2 frames a job on an idle
   * machine, 1.3 on a loaded one): at least one job held several. */
  assert_true(mean > 1.0 && mean <= max_batch);
  check_and_close(streams, LANES);
}

/* A job that fails (the CPU backend's fault injection at its fifth job)
 * fails every frame it held, of whichever streams, as failed frames in
 * their order; the streams' other frames come out right. */
static void
test_a_failed_batch_reaches_every_member(void **state)
{
  (void) state;
  test_rng rng;
  test_rng_seed(&rng, seed + 4);
  pp_backend_options opts = cpu_options(false, 4);
  opts.fail_frame = 5;
  stream streams[LANES];
  frame_rows = 400;
  for (unsigned i = 0; i < LANES; i++) {
    stream_open(&streams[i], &opts, 256, 1, &rng);
    streams[i].allow_failed = true;
  }
  frame_rows = H;
  run_streams(streams, LANES);
  const double mean = pp_engine_batch_mean(streams[0].engine);
  unsigned failed = 0;
  for (unsigned i = 0; i < LANES; i++)
    for (int f = 0; f < FRAMES; f++)
      failed += streams[i].failed[f];
  print_message("failed frames %u, frames a job %.2f\n", failed, mean);
  assert_true(failed >= 1 && failed <= 4);
  check_and_close(streams, LANES);
}

static void
test_batches_form(void **state)
{
  (void) state;
  batches_form(4);
  batches_form(2);
}

int
main(void)
{
  seed = test_seed();
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_lanes_share_one_backend),
    cmocka_unit_test(test_other_configurations),
    cmocka_unit_test(test_stalled_stream_holds_none_back),
    cmocka_unit_test(test_batches_form),
    cmocka_unit_test(test_a_failed_batch_reaches_every_member),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
