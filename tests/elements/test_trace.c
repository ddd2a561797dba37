// SPDX-License-Identifier: LGPL-2.1-or-later
/* PINGPONG_TRACE: cudamlp's Chrome trace of a run is valid JSON in the
 * trace-event format (read back with json-glib); every frame has its host
 * spans (wait for slot and submit inside chain, completion, push) and its
 * device stages on its slot's track (CPU: MLP; CUDA: H2D, MLP, D2H in that
 * order); and host and device spans nest in time: a frame's device work
 * starts after its submit began and ends before its completion.
 * PP_TEST_BACKEND=cuda runs the same on the GPU, where device times are put
 * on the host's clock within stated tolerances. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <glib/gstdio.h>
#include <gst/gst.h>
#include <json-glib/json-glib.h>
#include <string.h>
#include <unistd.h>

#include "piperun.h"
#include "testutil.h"
#include "gstmain.h"

enum { FRAMES = 40, SLOTS = 3 };
/* CUDA: device times are put on the host's clock by an anchor taken when
 * its event is known to have run (src/cuda/timing.c), so they can come out
 * late by the anchoring round's width, never early (but for event timer
 * resolution). Microseconds. */
#define DEVICE_LATE_US 50.0
#define DEVICE_EARLY_US 2.0

static const char *backend_name = "cpu";

typedef struct {
  double start, end; /* µs */
  gint64 tid;
  gboolean seen;
} span;

typedef struct {
  span chain, wait, submit, completion, push, h2d, mlp, d2h;
} frame_spans;

static span *
span_for(frame_spans *f, const char *name)
{
  static const char *names[] = { "chain", "wait for slot", "submit", "completion",
                                 "push",  "H2D",           "MLP",    "D2H" };
  span *spans[] = { &f->chain, &f->wait, &f->submit, &f->completion,
                    &f->push,  &f->h2d,  &f->mlp,    &f->d2h };
  for (guint i = 0; i < G_N_ELEMENTS(names); i++)
    if (g_str_equal(name, names[i]))
      return spans[i];
  return NULL;
}

static void
run_traced(const char *path)
{
  g_setenv("PINGPONG_TRACE", path, TRUE);
  g_autofree gchar *desc = g_strdup_printf(
      "videotestsrc num-buffers=%d pattern=snow ! video/x-raw,format=GRAY8,width=256,height=128 ! "
      "cudamlp backend=%s slots=%d hidden-size=256 ! fakesink",
      FRAMES, backend_name, SLOTS);
  g_autofree gchar *error = test_run_pipeline(desc, NULL); /* ends in NULL: the trace is written */
  if (error)
    fail_msg("%s", error);
  g_unsetenv("PINGPONG_TRACE");
}

static void
check_nested(const span *inner, const span *outer, double slack, const char *what, int frame)
{
  if (!(inner->start >= outer->start - slack && inner->end <= outer->end + slack))
    fail_msg("frame %d: %s [%.3f, %.3f] is not inside [%.3f, %.3f]", frame, what, inner->start,
             inner->end, outer->start, outer->end);
}

static void
check_before(const span *a, const span *b, double slack, const char *what, int frame)
{
  if (!(a->end <= b->start + slack))
    fail_msg("frame %d: %s: %.3f ends after %.3f", frame, what, a->end, b->start);
}

static void
test_trace_of_a_run(void **state)
{
  (void) state;
  g_autofree gchar *path = NULL;
  const gint fd = g_file_open_tmp("pp-trace-XXXXXX.json", &path, NULL);
  assert_true(fd >= 0);
  close(fd);
  run_traced(path);

  JsonParser *parser = json_parser_new();
  GError *error = NULL;
  if (!json_parser_load_from_file(parser, path, &error))
    fail_msg("%s is not JSON: %s", path, error->message);
  JsonObject *root = json_node_get_object(json_parser_get_root(parser));
  JsonArray *events = json_object_get_array_member(root, "traceEvents");
  assert_non_null(events);
  assert_int_equal(
      json_object_get_int_member(json_object_get_object_member(root, "otherData"), "dropped"), 0);

  frame_spans frames[FRAMES] = { 0 };
  for (guint i = 0; i < json_array_get_length(events); i++) {
    JsonObject *e = json_array_get_object_element(events, i);
    const char *ph = json_object_get_string_member(e, "ph");
    assert_true(g_str_equal(ph, "X") || g_str_equal(ph, "M"));
    if (!g_str_equal(ph, "X"))
      continue;
    const char *name = json_object_get_string_member(e, "name");
    const gint64 frame =
        json_object_get_int_member(json_object_get_object_member(e, "args"), "frame");
    assert_true(frame >= 0 && frame < FRAMES);
    span *s = span_for(&frames[frame], name);
    if (!s)
      fail_msg("unknown span '%s'", name);
    assert_false(s->seen); /* one of each per frame */
    const double ts = json_object_get_double_member(e, "ts");
    const double dur = json_object_get_double_member(e, "dur");
    assert_true(dur >= 0);
    *s = (span){ ts, ts + dur, json_object_get_int_member(e, "tid"), TRUE };
    /* Device stages on the device process, on the frame's slot's track. */
    const gboolean device =
        s == &frames[frame].h2d || s == &frames[frame].mlp || s == &frames[frame].d2h;
    assert_int_equal(json_object_get_int_member(e, "pid"), device ? 2 : 1);
    if (device)
      assert_int_equal(s->tid, frame % SLOTS);
  }

  const gboolean cuda = g_str_equal(backend_name, "cuda");
  const double late = cuda ? DEVICE_LATE_US : 0.0, early = cuda ? DEVICE_EARLY_US : 0.0;
  for (int f = 0; f < FRAMES; f++) {
    frame_spans *s = &frames[f];
    if (!(s->chain.seen && s->wait.seen && s->submit.seen && s->completion.seen && s->push.seen &&
          s->mlp.seen))
      fail_msg("frame %d lacks a host span or its MLP", f);
    assert_int_equal(s->h2d.seen, cuda);
    assert_int_equal(s->d2h.seen, cuda);
    check_nested(&s->wait, &s->chain, 0, "wait for slot in chain", f);
    /* A submit starts in chain; it ends there too unless the element's own
     * thread, woken before a paced frame, submitted it (consumer-submits). */
    const span submit_start = { s->submit.start, s->submit.start, s->submit.tid, TRUE };
    check_nested(&submit_start, &s->chain, 0, "submit's start in chain", f);
    assert_int_equal(s->wait.tid, s->chain.tid);
    const span *first = cuda ? &s->h2d : &s->mlp, *last = cuda ? &s->d2h : &s->mlp;
    if (cuda) {
      check_before(&s->h2d, &s->mlp, 1.0, "H2D before MLP", f);
      check_before(&s->mlp, &s->d2h, 1.0, "MLP before D2H", f);
    }
    if (!(first->start >= s->submit.start - early))
      fail_msg("frame %d: device work at %.3f before its submit at %.3f", f, first->start,
               s->submit.start);
    check_before(last, &s->completion, late, "device work before its completion", f);
    check_before(&s->completion, &s->push, 0, "completion before push", f);
    if (f > 0) /* in order */
      check_before(&frames[f - 1].push, &s->push, 0, "pushes in order", f);
  }
  g_object_unref(parser);
  g_unlink(path);
}

/* A trace path that cannot be written is said at start, as a warning on
 * the bus, and the frames still run to EOS. */
static void
test_unwritable_trace_warns(void **state)
{
  (void) state;
  g_setenv("PINGPONG_TRACE", "/nonexistent/folder/run.json", TRUE);
  g_autofree gchar *desc =
      g_strdup_printf("videotestsrc num-buffers=5 ! video/x-raw,format=GRAY8,width=32,height=16 ! "
                      "cudamlp backend=%s ! fakesink",
                      backend_name);
  GstElement *pipeline = gst_parse_launch(desc, NULL);
  assert_non_null(pipeline);
  GstBus *bus = gst_element_get_bus(pipeline);
  gst_element_set_state(pipeline, GST_STATE_PLAYING);
  gboolean warned = FALSE, ended = FALSE;
  while (!ended) {
    GstMessage *msg = gst_bus_timed_pop_filtered(
        bus, 30 * GST_SECOND, GST_MESSAGE_WARNING | GST_MESSAGE_EOS | GST_MESSAGE_ERROR);
    assert_non_null(msg);
    assert_int_not_equal(GST_MESSAGE_TYPE(msg), GST_MESSAGE_ERROR);
    if (GST_MESSAGE_TYPE(msg) == GST_MESSAGE_WARNING) {
      GError *err = NULL;
      gchar *debug = NULL;
      gst_message_parse_warning(msg, &err, &debug);
      warned |= strstr(err->message, "Cannot write the trace") != NULL &&
                strstr(debug, "/nonexistent/folder/run.json") != NULL;
      g_error_free(err);
      g_free(debug);
    }
    ended = GST_MESSAGE_TYPE(msg) == GST_MESSAGE_EOS;
    gst_message_unref(msg);
  }
  assert_true(warned);
  gst_element_set_state(pipeline, GST_STATE_NULL);
  gst_object_unref(bus);
  gst_object_unref(pipeline);
  g_unsetenv("PINGPONG_TRACE");
}

int
main(int argc, char **argv)
{
  gst_init(&argc, &argv);
  if (!test_gst_backend(&backend_name))
    return 77;
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_trace_of_a_run),
    cmocka_unit_test(test_unwritable_trace_warns),
  };
  return test_gst_run(tests, NULL);
}
