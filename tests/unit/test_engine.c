// SPDX-License-Identifier: LGPL-2.1-or-later
/* The engine's contract: results in submission order whatever order slots
 * finish in, markers where they were pushed, back-pressure, drain, flush,
 * teardown with frames in flight; and the CPU backend's results. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <glib.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_mlp.h"
#include "engine.h"
#include "frame.h"
#include "fake_backend.h"
#include "stats.h"
#include "testutil.h"
#include "timing.h"

static uint64_t seed;

/* ---- a harness around the engine ----------------------------------------- */

typedef struct {
  pp_engine *engine;
  fake_backend *fake;
  fake_frames frames;
  int discarded_frames, discarded_markers;
  GAsyncQueue *discarded;
} rig;

static void
on_discard(void *owner, const pp_item *item)
{
  rig *r = owner;
  if (item->kind == PP_ITEM_MARKER)
    r->discarded_markers++;
  else
    r->discarded_frames++;
  g_async_queue_push(r->discarded, item->user);
}

#define MARKER_BIT (1u << 30)

static rig *
rig_new_reporting(unsigned slots, bool hold, bool consumer)
{
  rig *r = g_new0(rig, 1);
  r->fake = fake_new(hold, seed);
  if (consumer)
    fake_report_on_consumer(r->fake);
  r->discarded = g_async_queue_new();
  r->engine = pp_engine_new(&r->fake->base, on_discard, r);
  pp_frame_layout layout;
  pp_model model = { .k = 1, .o = 1, .n_layers = 1, .layers = { { .in = 1, .out = 1 } } };
  char *msg = NULL;
  assert_int_equal(pp_layout_for_tensor(1, 1, &layout, &msg), 0);
  assert_int_equal(pp_engine_configure(r->engine, &model, &layout, slots, NULL, &msg), 0);
  return r;
}

static rig *
rig_new(unsigned slots, bool hold)
{
  return rig_new_reporting(slots, hold, false);
}

static void
rig_free(rig *r)
{
  if (r->engine)
    pp_engine_free(r->engine);
  g_async_queue_unref(r->discarded);
  g_free(r);
}

static int
submit_frame(rig *r, unsigned seq)
{
  return fake_submit_frame(r->engine, &r->frames, seq);
}

static void
expect_frame(rig *r, unsigned seq)
{
  fake_expect_frame(r->engine, &r->frames, seq, 0);
}

/* ---- ordering ------------------------------------------------------------ */

typedef struct {
  rig *r;
  unsigned frames;
} producer_args;

static gpointer
producer(gpointer data)
{
  producer_args *a = data;
  for (unsigned seq = 0; seq < a->frames; seq++) {
    assert_int_equal(submit_frame(a->r, seq), 0);
    if (seq % 7 == 3)
      assert_int_equal(pp_engine_push_marker(a->r->engine, GUINT_TO_POINTER(seq | MARKER_BIT)), 0);
  }
  return NULL;
}

/* Both ways of reporting: the backend's own thread, and the consumer's
 * (pp_backend_ops.wait, which says "not yet" at random first). */
static void
test_order_under_random_completion(void **state)
{
  (void) state;
  for (unsigned run = 0; run < 10; run++) {
    const unsigned slots = 1 + run % 5;
    const bool consumer = run >= 5;
    rig *r = rig_new_reporting(slots, false, consumer);
    producer_args args = { r, 400 };
    GThread *t = g_thread_new("producer", producer, &args);
    for (unsigned seq = 0; seq < args.frames; seq++) {
      expect_frame(r, seq);
      if (seq % 7 == 3) {
        pp_item item;
        assert_int_equal(pp_engine_pop(r->engine, &item), 0);
        assert_int_equal(item.kind, PP_ITEM_MARKER);
        assert_int_equal(GPOINTER_TO_UINT(item.user), seq | MARKER_BIT);
      }
    }
    g_thread_join(t);
    pp_stats stats;
    pp_engine_get_stats(r->engine, &stats);
    assert_int_equal(stats.frames, args.frames);
    assert_true(stats.latency_p50_us > 0 && stats.latency_p99_us >= stats.latency_p50_us);
    if (consumer) /* every frame waited on, some more than once */
      assert_true(r->fake->waits > (int) args.frames && r->fake->not_yet > 0);
    pp_engine_free(r->engine);
    r->engine = NULL;
    assert_int_equal(r->discarded_frames + r->discarded_markers, 0);
    rig_free(r);
  }
}

/* ---- back-pressure and drain ----------------------------------------------- */

typedef struct {
  rig *r;
  unsigned seq;
  volatile gint done;
  int rc;
} blocked_call;

static gpointer
submit_in_thread(gpointer data)
{
  blocked_call *c = data;
  c->rc = submit_frame(c->r, c->seq);
  g_atomic_int_set(&c->done, 1);
  return NULL;
}

static gpointer
pop_in_thread(gpointer data)
{
  blocked_call *c = data;
  pp_item item;
  c->rc = pp_engine_pop(c->r->engine, &item);
  g_atomic_int_set(&c->done, 1);
  return NULL;
}

static gpointer
drain_in_thread(gpointer data)
{
  blocked_call *c = data;
  c->rc = pp_engine_drain(c->r->engine);
  g_atomic_int_set(&c->done, 1);
  return NULL;
}

/* True if `c` is still blocked after 50 ms. */
static bool
still_blocked(blocked_call *c)
{
  g_usleep(50 * 1000);
  return !g_atomic_int_get(&c->done);
}

static void
test_back_pressure(void **state)
{
  (void) state;
  rig *r = rig_new(2, true);
  assert_int_equal(submit_frame(r, 0), 0);
  assert_int_equal(submit_frame(r, 1), 0);

  /* Both slots work: the third frame waits for one. */
  blocked_call third = { r, 2, 0, 0 };
  GThread *t = g_thread_new("third", submit_in_thread, &third);
  assert_true(still_blocked(&third));
  /* A slot is free again once its frame is done, popped or not. */
  fake_set_hold(r->fake, false);
  g_thread_join(t);
  assert_int_equal(third.rc, 0);
  assert_int_equal(submit_frame(r, 3), 0);

  /* Four frames hold all 2 × PP_TICKETS_PER_SLOT tickets: the fifth waits
   * for the consumer however idle the slots are. */
  blocked_call fifth = { r, 4, 0, 0 };
  t = g_thread_new("fifth", submit_in_thread, &fifth);
  assert_true(still_blocked(&fifth));
  expect_frame(r, 0);
  g_thread_join(t);
  assert_int_equal(fifth.rc, 0);
  for (unsigned seq = 1; seq <= 4; seq++)
    expect_frame(r, seq);
  rig_free(r);
}

/* A result the backend keeps in the slot (a staged copy) holds the slot
 * until it has been popped and finished. */
static void
test_held_slots_wait_for_finish(void **state)
{
  (void) state;
  rig *r = rig_new(1, false);
  r->fake->hold_slots = true;
  assert_int_equal(submit_frame(r, 0), 0);
  blocked_call second = { r, 1, 0, 0 };
  GThread *t = g_thread_new("second", submit_in_thread, &second);
  assert_true(still_blocked(&second)); /* done, but the slot holds its result */
  expect_frame(r, 0);                  /* pop calls finish, which writes the output */
  g_thread_join(t);
  assert_int_equal(second.rc, 0);
  expect_frame(r, 1);
  assert_int_equal(r->fake->finished, 2);
  rig_free(r);
}

static void
test_drain_waits_for_every_result(void **state)
{
  (void) state;
  rig *r = rig_new(3, true);
  for (unsigned seq = 0; seq < 3; seq++)
    assert_int_equal(submit_frame(r, seq), 0);
  assert_int_equal(pp_engine_push_marker(r->engine, GUINT_TO_POINTER(MARKER_BIT)), 0);
  blocked_call drain = { r, 0, 0, -1 };
  GThread *t = g_thread_new("drain", drain_in_thread, &drain);
  fake_set_hold(r->fake, false);
  for (unsigned seq = 0; seq < 3; seq++) {
    assert_true(still_blocked(&drain));
    expect_frame(r, seq);
  }
  assert_true(still_blocked(&drain)); /* the marker is still queued */
  pp_item item;
  assert_int_equal(pp_engine_pop(r->engine, &item), 0);
  assert_int_equal(item.kind, PP_ITEM_MARKER);
  g_thread_join(t);
  assert_int_equal(drain.rc, 0);
  rig_free(r);
}

/* ---- flush and teardown --------------------------------------------------- */

static void
flush_discards_in_flight(bool consumer)
{
  rig *r = rig_new_reporting(4, true, consumer);
  for (unsigned seq = 0; seq < 4; seq++)
    assert_int_equal(submit_frame(r, seq), 0);
  assert_int_equal(pp_engine_push_marker(r->engine, GUINT_TO_POINTER(MARKER_BIT)), 0);

  /* A producer blocked on a full engine wakes with -ECANCELED. */
  blocked_call fifth = { r, 4, 0, 0 };
  GThread *t = g_thread_new("fifth", submit_in_thread, &fifth);
  assert_true(still_blocked(&fifth));
  /* So does a consumer waiting for a held frame (inside the backend's wait
   * when it reports on the consumer's thread). */
  blocked_call popper = { r, 0, 0, 0 };
  GThread *p = g_thread_new("pop", pop_in_thread, &popper);
  assert_true(still_blocked(&popper));
  pp_engine_set_flushing(r->engine, true);
  g_thread_join(t);
  g_thread_join(p);
  assert_int_equal(fifth.rc, -ECANCELED);
  assert_int_equal(popper.rc, -ECANCELED);
  if (consumer)
    assert_true(r->fake->not_yet > 0);
  pp_item item;
  assert_int_equal(pp_engine_pop(r->engine, &item), -ECANCELED);
  assert_int_equal(pp_engine_push_marker(r->engine, NULL), -ECANCELED);

  pp_engine_flush(r->engine);
  assert_int_equal(r->discarded_frames, 4);
  assert_int_equal(r->discarded_markers, 1);
  for (unsigned seq = 1; seq <= 4; seq++)
    assert_int_equal(GPOINTER_TO_UINT(g_async_queue_pop(r->discarded)), seq);

  /* Afterwards nothing stale comes out, and new frames flow. */
  pp_engine_set_flushing(r->engine, false);
  fake_set_hold(r->fake, false);
  for (unsigned seq = 100; seq < 110; seq++) {
    assert_int_equal(submit_frame(r, seq), 0);
    if (seq >= 103) /* keep the four slots busy */
      expect_frame(r, seq - 3);
  }
  for (unsigned seq = 107; seq < 110; seq++)
    expect_frame(r, seq);
  pp_engine_free(r->engine);
  r->engine = NULL;
  assert_int_equal(r->discarded_frames, 4); /* nothing more was thrown away */
  rig_free(r);
}

static void
test_flush_discards_in_flight(void **state)
{
  (void) state;
  flush_discards_in_flight(false);
  /* A consumer waiting on the backend sees the flush too. */
  flush_discards_in_flight(true);
}

/* ---- a paced stream ------------------------------------------------------- */

typedef struct {
  rig *r;
  unsigned first, frames;
  gulong interval_us;
  unsigned burst; /* then this many more at once */
  bool fail_last; /* the backend refuses the last of the burst */
  int last_rc;    /* what submitting it returned */
} paced_args;

/* Until the backend has taken frame `seq`. A frame the producer submits
 * may reach the backend later, from the consumer's thread; a refusal
 * meant for the frame after it must not find it still on its way. */
static void
wait_backend_took(rig *r, unsigned seq)
{
  fake_backend *f = r->fake;
  const gint64 deadline = g_get_monotonic_time() + 10 * G_TIME_SPAN_SECOND;
  g_mutex_lock(&f->lock);
  while (f->inputs->len == 0 || g_array_index(f->inputs, float, f->inputs->len - 1) < (float) seq)
    if (!g_cond_wait_until(&f->changed, &f->lock, deadline))
      break;
  const bool took =
      f->inputs->len > 0 && g_array_index(f->inputs, float, f->inputs->len - 1) >= (float) seq;
  g_mutex_unlock(&f->lock);
  assert_true(took);
}

/* Frames at a steady pace, each at its own time on the clock (waited for
 * awake: a sleep's overshoot on a loaded machine would break the pace). */
static gpointer
paced_producer(gpointer data)
{
  paced_args *a = data;
  const unsigned end = a->first + a->frames + a->burst;
  int64_t at = pp_now_ns();
  for (unsigned seq = a->first; seq < end; seq++) {
    while (pp_now_ns() < at)
      ;
    if (a->fail_last && seq + 1 == end) {
      wait_backend_took(a->r, seq - 1);
      g_mutex_lock(&a->r->fake->lock);
      a->r->fake->fail_submits = 1;
      g_mutex_unlock(&a->r->fake->lock);
    }
    a->last_rc = submit_frame(a->r, seq);
    if (!(a->fail_last && seq + 1 == end))
      assert_int_equal(a->last_rc, 0);
    if (seq < a->first + a->frames)
      at += (int64_t) a->interval_us * 1000;
  }
  return NULL;
}

static uint64_t
consumer_submits(rig *r)
{
  pp_stats stats;
  pp_engine_get_stats(r->engine, &stats);
  return stats.consumer_submits;
}

/* Frames at a steady 1 ms to a consumer that reports them itself, which
 * then sleeps until just before each is due, watches for it awake and
 * submits it itself (engine_paced.c): every frame still comes
 * out in order, with its own result; a flush while it watches for a frame
 * that never comes ends its pop; frames late by more than the watch come
 * out too; frames at once after the pace reach the backend in order,
 * whichever thread submits them; a frame the backend refuses either gives
 * its producer the error or comes out failed, and the next flows. */
static void
test_paced_consumer(void **state)
{
  (void) state;
  rig *r = rig_new_reporting(2, false, true);
  /* Until the consumer has submitted frames itself: on a machine too busy
   * to wake it within the watch it never does, and the rest would not
   * test its path. */
  GThread *p;
  for (unsigned round = 0; round < 10 && consumer_submits(r) == 0; round++) {
    paced_args a = { r, round * 50, 50, 1000, 0, false, 0 };
    p = g_thread_new("paced", paced_producer, &a);
    for (unsigned seq = a.first; seq < a.first + a.frames; seq++)
      expect_frame(r, seq);
    g_thread_join(p);
  }
  if (consumer_submits(r) == 0) {
    rig_free(r);
    skip();
  }

  blocked_call popper = { r, 0, 0, 0 };
  GThread *q = g_thread_new("pop", pop_in_thread, &popper);
  assert_true(still_blocked(&popper));
  pp_engine_set_flushing(r->engine, true);
  g_thread_join(q);
  assert_int_equal(popper.rc, -ECANCELED);
  pp_engine_flush(r->engine);
  pp_engine_set_flushing(r->engine, false);

  /* Frame numbers go on rising: the backend's log is checked for order. */
  paced_args late = { r, 1000, 5, 3000, 0, false, 0 };
  p = g_thread_new("late", paced_producer, &late);
  for (unsigned seq = 1000; seq < 1005; seq++)
    expect_frame(r, seq);
  g_thread_join(p);

  paced_args burst = { r, 1100, 30, 1000, 2, false, 0 };
  p = g_thread_new("burst", paced_producer, &burst);
  for (unsigned seq = 1100; seq < 1132; seq++)
    expect_frame(r, seq);
  g_thread_join(p);
  for (guint i = 1; i < r->fake->inputs->len; i++)
    assert_true(g_array_index(r->fake->inputs, float, i) >
                g_array_index(r->fake->inputs, float, i - 1));

  paced_args refused = { r, 1200, 30, 1000, 1, true, 0 };
  p = g_thread_new("refused", paced_producer, &refused);
  for (unsigned seq = 1200; seq < 1230; seq++)
    expect_frame(r, seq);
  g_thread_join(p);
  if (refused.last_rc == 0)
    fake_expect_frame(r->engine, &r->frames, 1230, -EIO);
  else
    assert_int_equal(refused.last_rc, -EIO);
  assert_int_equal(submit_frame(r, 1231), 0);
  expect_frame(r, 1231);
  rig_free(r);

  /* Pre-wake off: the producer submits every frame. */
  r = rig_new_reporting(2, false, true);
  pp_engine_set_prewake(r->engine, false);
  paced_args off = { r, 0, 30, 1000, 0, false, 0 };
  p = g_thread_new("paced", paced_producer, &off);
  for (unsigned seq = 0; seq < 30; seq++)
    expect_frame(r, seq);
  g_thread_join(p);
  assert_int_equal(consumer_submits(r), 0);
  rig_free(r);
}

static void
test_teardown_with_frames_in_flight(void **state)
{
  (void) state;
  rig *r = rig_new(3, true);
  for (unsigned seq = 0; seq < 3; seq++)
    assert_int_equal(submit_frame(r, seq), 0);
  assert_int_equal(pp_engine_push_marker(r->engine, GUINT_TO_POINTER(MARKER_BIT)), 0);
  GAsyncQueue *discarded = g_async_queue_ref(r->discarded);
  pp_engine_free(r->engine);
  /* Each frame and marker freed exactly once. */
  assert_int_equal(r->discarded_frames, 3);
  assert_int_equal(r->discarded_markers, 1);
  assert_int_equal(g_async_queue_length(discarded), 4);
  g_async_queue_unref(discarded);
  g_async_queue_unref(r->discarded);
  g_free(r);
}

static void
test_failures(void **state)
{
  (void) state;
  rig *r = rig_new(1, true);
  g_mutex_lock(&r->fake->lock);
  r->fake->fail_submits = 1;
  r->fake->fail_completion = 1;
  g_mutex_unlock(&r->fake->lock);
  /* A refused submit leaves the engine as if it had not happened. */
  assert_int_equal(submit_frame(r, 0), -EIO);
  assert_int_equal(submit_frame(r, 0), 0);
  fake_set_hold(r->fake, false);
  /* A frame that fails on the backend comes out, in order, with its error. */
  pp_item item;
  assert_int_equal(pp_engine_pop(r->engine, &item), 0);
  assert_int_equal(GPOINTER_TO_UINT(item.user), 1);
  assert_int_equal(item.status, -EIO);
  assert_string_equal(item.message, "disk on fire");
  pp_engine_release(r->engine, item.ticket);
  assert_int_equal(submit_frame(r, 1), 0);
  expect_frame(r, 1);
  rig_free(r);
}

/* ---- the CPU backend through the engine ------------------------------------ */

/* With `devices` > 1, one CPU backend per "device", as device-id="0,1,..."
 * spreads slots over GPUs: the same results must come out, in order. */
static void
check_cpu_backend(uint32_t w, uint32_t h, uint32_t d, uint32_t o, pp_hidden_activation act,
                  unsigned slots, unsigned devices)
{
  test_rng rng;
  test_rng_seed(&rng, seed ^ (w * 31 + h));
  pp_backend *backend = NULL;
  char *msg = NULL;
  pp_backend_options opts = { .kind = PP_BACKEND_CPU, .n_devices = devices };
  for (unsigned i = 0; i < devices; i++)
    opts.devices[i] = (int) i;
  assert_int_equal(pp_backend_open(&opts, NULL, NULL, &backend, NULL, &msg), 0);
  assert_string_equal(backend->ops->name, "cpu");
  pp_engine *engine = pp_engine_new(backend, NULL, NULL);
  pp_frame_layout layout;
  const uint32_t stride = (w * 3 + 3) / 4 * 4;
  assert_int_equal(
      pp_layout_for_video(PP_PIXEL_RGB, w, h, stride, PP_MAPPING_ROWS, 0, &layout, &msg), 0);
  pp_model *model = NULL;
  assert_int_equal(pp_model_generate(layout.k, d, o, act, &model), 0);
  assert_int_equal(pp_engine_configure(engine, model, &layout, slots, NULL, &msg), 0);

  enum { FRAMES = 12 };
  uint8_t *frames[FRAMES];
  float *outputs[FRAMES];
  for (int i = 0; i < FRAMES; i++) {
    frames[i] = g_malloc(layout.frame_bytes);
    test_rng_fill_bytes(&rng, frames[i], layout.frame_bytes);
    outputs[i] = g_new(float, (size_t) layout.n *o);
    test_poison(outputs[i], (size_t) layout.n * o);
  }
  /* Submit all, popping as slots fill, then check each against the reference. */
  int popped = 0;
  for (int i = 0; i < FRAMES; i++) {
    unsigned slot;
    if (i >= (int) slots) {
      pp_item item;
      assert_int_equal(pp_engine_pop(engine, &item), 0);
      assert_int_equal(GPOINTER_TO_INT(item.user), popped++ + 1);
      pp_engine_release(engine, item.ticket);
    }
    assert_int_equal(pp_engine_acquire(engine, &slot), 0);
    const pp_job job = { .input = frames[i], .output = outputs[i] };
    assert_int_equal(pp_engine_submit(engine, slot, &job, GINT_TO_POINTER(i + 1), &msg), 0);
  }
  while (popped < FRAMES) {
    pp_item item;
    assert_int_equal(pp_engine_pop(engine, &item), 0);
    assert_int_equal(GPOINTER_TO_INT(item.user), popped++ + 1);
    pp_engine_release(engine, item.ticket);
  }
  float *x = g_new(float, (size_t) layout.n *layout.k);
  double *ref = g_new(double, (size_t) layout.n *o), *mag = g_new(double, (size_t) layout.n *o);
  for (int i = 0; i < FRAMES; i++) {
    /* X straight from the bytes, independently of pp_cpu_gather. */
    for (uint32_t row = 0; row < layout.n; row++)
      for (uint32_t k = 0; k < layout.k; k++)
        x[(size_t) row * layout.k + k] = frames[i][row * stride + k] / 255.0f;
    test_reference_mlp(model, x, layout.n, ref, mag);
    const double err = test_scaled_error(outputs[i], ref, mag, (size_t) layout.n * o);
    if (!(err <= PP_FP32_REL_TOL))
      fail_msg("frame %d: scaled error %.3e > %.0e", i, err, PP_FP32_REL_TOL);
    g_free(frames[i]);
    g_free(outputs[i]);
  }
  g_free(x), g_free(ref), g_free(mag);
  pp_engine_free(engine);
  pp_model_free(model);
}

/* completion=auto: the consumer; the other values stay as they are. */
static void
test_completion_auto(void **state)
{
  (void) state;
  assert_int_equal(pp_completion_resolve(PP_COMPLETION_AUTO), PP_COMPLETION_CONSUMER);
  for (int c = PP_COMPLETION_EVENT_THREAD; c < PP_COMPLETION_AUTO; c++)
    assert_int_equal(pp_completion_resolve((pp_completion) c), c);
}

static void
test_cpu_backend_results(void **state)
{
  (void) state;
  check_cpu_backend(31, 17, 40, 1, PP_HIDDEN_NONE, 2, 1);
  check_cpu_backend(20, 9, 13, 7, PP_HIDDEN_RELU, 3, 1);
  check_cpu_backend(64, 33, 64, 2, PP_HIDDEN_RELU, 1, 1);
  /* Spread over 2 and 3 "devices", 2 or 3 slots each at most. */
  check_cpu_backend(20, 9, 13, 7, PP_HIDDEN_RELU, 3, 2);
  check_cpu_backend(31, 17, 40, 3, PP_HIDDEN_RELU, 7, 3);
}

int
main(void)
{
  seed = test_seed();
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_order_under_random_completion),
    cmocka_unit_test(test_back_pressure),
    cmocka_unit_test(test_held_slots_wait_for_finish),
    cmocka_unit_test(test_drain_waits_for_every_result),
    cmocka_unit_test(test_flush_discards_in_flight),
    cmocka_unit_test(test_teardown_with_frames_in_flight),
    cmocka_unit_test(test_paced_consumer),
    cmocka_unit_test(test_failures),
    cmocka_unit_test(test_cpu_backend_results),
    cmocka_unit_test(test_completion_auto),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
