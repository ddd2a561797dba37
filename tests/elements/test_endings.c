// SPDX-License-Identifier: LGPL-2.1-or-later
/* Every way a pipeline with cudamlp, scoreoverlay or the io_uring elements
 * can end — downstream stopping early, caps or settings refused, the
 * backend failing at the first frame or later, EOS or a flush while frames
 * wait in slots — each run many times through gst_parse_launch and handled
 * as gst-launch does (the first error or EOS, then NULL). Every run must end
 * the expected way within a few seconds, reach NULL, say why in one error
 * from the element at fault (the reason in the error's message, what an
 * application shows, not only in its debug text), and deliver the frames it
 * delivers in order and none after the one that failed.
 *
 * PP_TEST_ENDINGS_RUNS sets the runs of the caps and downstream-EOS cases
 * (200 unless set); the others run a tenth as often. Slot counts 1 to 4
 * take turns across runs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <glib/gstdio.h>
#include <gst/app/gstappsink.h>
#include <gst/app/gstappsrc.h>
#include <gst/gst.h>
#include <string.h>
#include <sys/stat.h>

#include "gstmain.h"
#include "testutil.h"
#include "watchdog.h"

/* Seconds a run may take to reach its end, and NULL after it. */
enum { END_WITHIN_S = 10 };

typedef enum {
  ENDS_EOS,           /* EOS reaches the bus */
  ENDS_ERROR,         /* an error from `at_fault`, while streaming */
  ENDS_REFUSED_START, /* the change to PLAYING fails, with an error */
  ENDS_REFUSED_LINK,  /* gst_parse_launch cannot link: caps never fit */
} ending_kind;

typedef struct {
  guint width, height, count;
  gsize bytes; /* each buffer's size, where not a whole frame's */
} feed_part;

typedef struct {
  const char *name;
  /* gst-launch description: {slots} the slots, {dir} a scratch folder. The
   * frames reach `appsink name=out` where the case has one. */
  const char *desc;
  ending_kind ends;
  const char *error_has;   /* in the error's message, where one is expected */
  const char *at_fault;    /* element that posts it (default "mlp") */
  gboolean many;           /* a caps or downstream-EOS case: full runs */
  gint sink_eos_after;     /* `out` returns EOS after this many (-1 never) */
  const char *cpu_fail_at; /* PINGPONG_CPU_FAIL_AT */
  gboolean flush_midway;   /* a flushing seek back to 0 after preroll */
  gint frames_exactly;     /* frames `out` must get (-1: not checked) */
  gint frames_at_most;     /* (-1: not checked) */
  feed_part feed[2];       /* frames `appsrc name=in` pushes, in turn */
  const char *needs;       /* element factory the case needs */
  const char *file_out;    /* %s: the scratch folder; a PNG must be there */
} ending;

#define GRAY64 "video/x-raw,format=GRAY8,width=64,height=64,framerate=30/1"
#define MLP "cudamlp name=mlp backend=cpu slots={slots}"
#define APPSRC "appsrc name=in format=time caps=video/x-raw,format=GRAY8,framerate=30/1 "

static const ending endings[] = {
  /* Downstream stops early. */
  { "identity eos-after=1",
    "videotestsrc num-buffers=20 ! " GRAY64 " ! " MLP
    " ! identity eos-after=1 ! appsink name=out sync=false",
    ENDS_EOS, .many = TRUE, .sink_eos_after = -1, .frames_at_most = 1, .frames_exactly = -1 },
  { "queue, identity eos-after=5",
    "videotestsrc num-buffers=40 ! " GRAY64 " ! " MLP
    " ! queue ! identity eos-after=5 ! appsink name=out sync=false",
    ENDS_EOS, .many = TRUE, .sink_eos_after = -1, .frames_at_most = 5, .frames_exactly = -1 },
  { "sink EOS at the first frame",
    "videotestsrc num-buffers=20 ! " GRAY64 " ! " MLP " ! appsink name=out sync=false", ENDS_EOS,
    .many = TRUE, .sink_eos_after = 0, .frames_exactly = 0, .frames_at_most = -1 },
  { "sink EOS after 1",
    "videotestsrc num-buffers=20 ! " GRAY64 " ! " MLP " ! appsink name=out sync=false", ENDS_EOS,
    .many = TRUE, .sink_eos_after = 1, .frames_exactly = 1, .frames_at_most = -1 },
  { "sink EOS after 9",
    "videotestsrc num-buffers=40 ! " GRAY64 " ! " MLP " ! appsink name=out sync=false", ENDS_EOS,
    .many = TRUE, .sink_eos_after = 9, .frames_exactly = 9, .frames_at_most = -1 },
  { "pngenc snapshot after scoreoverlay",
    "videotestsrc num-buffers=10 ! video/x-raw,format=I420,width=64,height=48 ! " MLP
    " mapping=patches patch-size=8 ! scoreoverlay ! videoconvert ! pngenc snapshot=true"
    " ! filesink location={dir}/snapshot.png",
    ENDS_EOS, .many = TRUE, .sink_eos_after = -1, .frames_exactly = -1, .frames_at_most = -1,
    .needs = "pngenc", .file_out = "snapshot.png" },
  { "scoreoverlay, identity eos-after=2",
    "videotestsrc num-buffers=20 ! video/x-raw,format=RGBA,width=64,height=48 ! " MLP
    " mapping=patches patch-size=8 ! scoreoverlay ! identity eos-after=2 ! appsink name=out"
    " sync=false",
    ENDS_EOS, .many = TRUE, .sink_eos_after = -1, .frames_at_most = 2, .frames_exactly = -1 },

  /* Caps refused. */
  { "patch larger than the frame",
    APPSRC " ! " MLP " mapping=patches patch-size=16"
           " ! appsink name=out sync=false",
    ENDS_ERROR, "holds no whole 16×16 patch", .many = TRUE, .sink_eos_after = -1,
    .frames_exactly = 0, .frames_at_most = -1, .feed = { { 8, 8, 3 } } },
  { "caps refused after frames in slots",
    APPSRC " ! " MLP " mapping=patches patch-size=16"
           " ! appsink name=out sync=false",
    ENDS_ERROR, "holds no whole 16×16 patch", .many = TRUE, .sink_eos_after = -1,
    .frames_exactly = 6, .frames_at_most = -1, .feed = { { 64, 64, 6 }, { 8, 8, 3 } } },
  { "K of the frame is not the model's",
    APPSRC " ! " MLP " layers=\"linear(64,8),relu,linear(8,1)\" ! appsink name=out sync=false",
    ENDS_ERROR, "frames 64 pixels wide (K=64 ÷ 1 channel) fit", .many = TRUE, .sink_eos_after = -1,
    .frames_exactly = 0, .frames_at_most = -1, .feed = { { 8, 8, 3 } } },
  { "K of the patch is not the model's",
    "videotestsrc num-buffers=3 ! video/x-raw,format=GRAY8,width=8,height=8 ! " MLP
    " layers=\"linear(64,8),relu,linear(8,1)\" mapping=patches patch-size=4 ! appsink name=out"
    " sync=false",
    ENDS_ERROR, "patch-size=8 fits the model's K=64", .many = TRUE, .sink_eos_after = -1,
    .frames_exactly = 0, .frames_at_most = -1 },
  { "fixed caps the model cannot take",
    "videotestsrc num-buffers=3 ! video/x-raw,format=GRAY8,width=8,height=8 ! " MLP
    " mapping=patches patch-size=16 ! appsink name=out sync=false",
    ENDS_ERROR, "holds no whole 16×16 patch", .many = TRUE, .sink_eos_after = -1,
    .frames_exactly = 0, .frames_at_most = -1 },

  /* Settings refused at start. */
  { "hidden-sizes=0", "videotestsrc num-buffers=3 ! " GRAY64 " ! " MLP " hidden-sizes=0 ! fakesink",
    ENDS_REFUSED_START, "is not a width", .sink_eos_after = -1 },
  { "layers that do not chain",
    "videotestsrc num-buffers=3 ! " GRAY64 " ! " MLP " layers=\"linear(64,8),relu,linear(9,1)\""
    " ! fakesink",
    ENDS_REFUSED_START, "linear(9,1)", .sink_eos_after = -1 },
  { "model file missing",
    "videotestsrc num-buffers=3 ! " GRAY64 " ! " MLP " model={dir}/none.safetensors ! fakesink",
    ENDS_REFUSED_START, "No such file or directory", .sink_eos_after = -1 },
  { "device-id not a number",
    "videotestsrc num-buffers=3 ! " GRAY64 " ! " MLP " device-id=x ! fakesink", ENDS_REFUSED_START,
    "give a device number", .sink_eos_after = -1 },
  { "layers with an unknown module",
    "videotestsrc num-buffers=3 ! " GRAY64 " ! " MLP " layers=\"linear(64,8),foo,linear(8,1)\""
    " ! fakesink",
    ENDS_REFUSED_START, "unknown module 'foo'", .sink_eos_after = -1 },
  { "model path a FIFO",
    "videotestsrc num-buffers=3 ! " GRAY64 " ! " MLP " model={dir}/fifo.safetensors ! fakesink",
    ENDS_REFUSED_START, "not a regular file", .sink_eos_after = -1 },

  /* The backend fails. */
  { "plan refused at caps",
    "videotestsrc num-buffers=20 ! " GRAY64 " ! " MLP " plan=fused ! appsink name=out sync=false",
    ENDS_ERROR, "nothing to choose", .many = TRUE, .sink_eos_after = -1, .frames_exactly = 0,
    .frames_at_most = -1 },
  { "backend fails the first frame",
    "videotestsrc num-buffers=20 ! " GRAY64 " ! " MLP " ! appsink name=out sync=false", ENDS_ERROR,
    "on purpose", .sink_eos_after = -1, .cpu_fail_at = "0", .frames_exactly = 0,
    .frames_at_most = -1 },
  { "backend fails frame 7",
    "videotestsrc num-buffers=20 ! " GRAY64 " ! " MLP " ! appsink name=out sync=false", ENDS_ERROR,
    "on purpose", .sink_eos_after = -1, .cpu_fail_at = "7", .frames_exactly = 7,
    .frames_at_most = -1 },

  /* A buffer refused: every frame accepted before it comes out first. */
  { "a short buffer after 10 frames", APPSRC " ! " MLP " ! appsink name=out sync=false", ENDS_ERROR,
    "1000 bytes", .many = TRUE, .sink_eos_after = -1, .frames_exactly = 10, .frames_at_most = -1,
    .feed = { { 64, 64, 10 }, { 64, 64, 1, 1000 } } },

  /* EOS and flushes while frames wait in slots. */
  { "EOS with slots full",
    "videotestsrc num-buffers=7 ! " GRAY64 " ! " MLP " ! appsink name=out sync=false", ENDS_EOS,
    .many = TRUE, .sink_eos_after = -1, .frames_exactly = 7, .frames_at_most = -1 },
  { "EOS right behind the frames", APPSRC " ! " MLP " ! appsink name=out sync=false", ENDS_EOS,
    .many = TRUE, .sink_eos_after = -1, .frames_exactly = 5, .frames_at_most = -1,
    .feed = { { 64, 64, 5 } } },
  { "flushing seek mid-stream",
    "videotestsrc num-buffers=60 ! " GRAY64 " ! " MLP " ! appsink name=out sync=false", ENDS_EOS,
    .sink_eos_after = -1, .flush_midway = TRUE, .frames_exactly = -1, .frames_at_most = -1 },

  /* The io_uring elements. */
  { "uringsrc: no such file", "uringsrc name=src location={dir}/none ! fakesink",
    ENDS_REFUSED_START, "No such file or directory", .at_fault = "src", .sink_eos_after = -1,
    .needs = "uringsrc" },
  { "uringsrc: a folder", "uringsrc name=src location={dir} ! fakesink", ENDS_REFUSED_START,
    "is a directory", .at_fault = "src", .sink_eos_after = -1, .needs = "uringsrc" },
  { "uringsrc: no location", "uringsrc name=src ! fakesink", ENDS_REFUSED_START,
    "set the location property", .at_fault = "src", .sink_eos_after = -1, .needs = "uringsrc" },
  { "uringsrc: direct=true, blocksize 1000",
    "uringsrc name=src location={dir}/frames direct=true blocksize=1000 ! fakesink",
    ENDS_REFUSED_START, "multiple of 4096 bytes", .at_fault = "src", .sink_eos_after = -1,
    .needs = "uringsrc" },
  { "uringsink: no such folder",
    "videotestsrc num-buffers=3 ! uringsink name=sink location={dir}/no/out", ENDS_REFUSED_START,
    "no/out", .at_fault = "sink", .sink_eos_after = -1, .needs = "uringsink" },
  { "uringsink: a full disk", "videotestsrc num-buffers=3 ! uringsink name=sink location=/dev/full",
    ENDS_ERROR, "space", .at_fault = "sink", .sink_eos_after = -1, .frames_exactly = -1,
    .frames_at_most = -1, .needs = "uringsink" },
  { "uringsrc's caps refused downstream",
    "uringsrc name=src location={dir}/frames caps=video/x-raw,format=GRAY8,width=8,height=8,"
    "framerate=30/1 ! " MLP " mapping=patches patch-size=16 ! appsink name=out sync=false",
    ENDS_ERROR, "holds no whole 16×16 patch", .sink_eos_after = -1, .frames_exactly = 0,
    .frames_at_most = -1, .needs = "uringsrc" },
  { "uringsrc's caps refused by a capsfilter",
    "uringsrc name=src location={dir}/frames caps=video/x-raw,format=GRAY8,width=8,height=8,"
    "framerate=30/1 ! video/x-raw,width=16 ! fakesink",
    ENDS_REFUSED_START, "width 8, where it takes 16", .at_fault = "src", .sink_eos_after = -1,
    .needs = "uringsrc" },
  { "uringsrc, identity eos-after=2",
    "uringsrc location={dir}/frames blocksize=4096 ! identity eos-after=2 ! appsink name=out"
    " sync=false",
    ENDS_EOS, .many = TRUE, .sink_eos_after = -1, .frames_at_most = 2, .frames_exactly = -1,
    .needs = "uringsrc" },
  { "uringsrc, a partial last frame, cudamlp",
    "uringsrc location={dir}/frames-partial caps=" GRAY64 " ! " MLP
    " ! appsink name=out sync=false",
    ENDS_EOS, .many = TRUE, .sink_eos_after = -1, .frames_exactly = 10, .frames_at_most = -1,
    .needs = "uringsrc" },
  { "uringsrc, cudamlp, sink EOS after 3",
    "uringsrc location={dir}/frames caps=" GRAY64 " ! " MLP " ! appsink name=out sync=false",
    ENDS_EOS, .many = TRUE, .sink_eos_after = 3, .frames_exactly = 3, .frames_at_most = -1,
    .needs = "uringsrc" },
};

typedef struct {
  const ending *e;
  guint run, slots;
  gint received; /* frames `out` accepted */
  GstClockTime last_pts;
  gboolean out_of_order;
  gchar *state; /* what the watchdog prints */
} run_state;

static GstFlowReturn
on_sample(GstAppSink *sink, gpointer data)
{
  run_state *r = data;
  GstSample *sample = gst_app_sink_pull_sample(sink);
  if (!sample)
    return GST_FLOW_FLUSHING;
  const GstClockTime pts = GST_BUFFER_PTS(gst_sample_get_buffer(sample));
  gst_sample_unref(sample);
  if (r->e->sink_eos_after >= 0 && g_atomic_int_get(&r->received) >= r->e->sink_eos_after)
    return GST_FLOW_EOS;
  if (GST_CLOCK_TIME_IS_VALID(r->last_pts) && GST_CLOCK_TIME_IS_VALID(pts) && pts <= r->last_pts &&
      !r->e->flush_midway)
    r->out_of_order = TRUE;
  r->last_pts = pts;
  g_atomic_int_inc(&r->received);
  return GST_FLOW_OK;
}

static void
feed_frames(GstElement *pipeline, const ending *e)
{
  GstElement *in = gst_bin_get_by_name(GST_BIN(pipeline), "in");
  if (!in)
    return;
  test_rng rng;
  test_rng_seed(&rng, 7);
  guint n = 0;
  for (guint p = 0; p < G_N_ELEMENTS(e->feed) && e->feed[p].count; p++) {
    const feed_part *f = &e->feed[p];
    GstCaps *caps = gst_caps_new_simple("video/x-raw", "format", G_TYPE_STRING, "GRAY8", "width",
                                        G_TYPE_INT, f->width, "height", G_TYPE_INT, f->height,
                                        "framerate", GST_TYPE_FRACTION, 30, 1, NULL);
    gst_app_src_set_caps(GST_APP_SRC(in), caps);
    gst_caps_unref(caps);
    for (guint i = 0; i < f->count; i++, n++) {
      const gsize size = f->bytes ? f->bytes : (gsize) f->width * f->height;
      guint8 *bytes = g_malloc(size);
      test_rng_fill_bytes(&rng, bytes, size);
      GstBuffer *buf = gst_buffer_new_wrapped(bytes, size);
      GST_BUFFER_PTS(buf) = gst_util_uint64_scale(n, GST_SECOND, 30);
      GST_BUFFER_DURATION(buf) = gst_util_uint64_scale(1, GST_SECOND, 30);
      assert_int_equal(gst_app_src_push_buffer(GST_APP_SRC(in), buf), GST_FLOW_OK);
    }
  }
  gst_app_src_end_of_stream(GST_APP_SRC(in));
  gst_object_unref(in);
}

static gboolean
error_from(GstMessage *msg, const char *element)
{
  return GST_MESSAGE_TYPE(msg) == GST_MESSAGE_ERROR &&
         g_str_equal(GST_OBJECT_NAME(GST_MESSAGE_SRC(msg)), element);
}

/* What an application shows: the message alone. */
static gchar *
error_message(GstMessage *msg)
{
  GError *err = NULL;
  gst_message_parse_error(msg, &err, NULL);
  gchar *text = g_strdup(err->message);
  g_error_free(err);
  return text;
}

static gchar *
error_text(GstMessage *msg)
{
  GError *err = NULL;
  gchar *debug = NULL;
  gst_message_parse_error(msg, &err, &debug);
  gchar *text = g_strdup_printf("%s | %s", err->message, debug ? debug : "");
  g_error_free(err);
  g_free(debug);
  return text;
}

/* GstBaseSink and GstBaseSrc post "Failed to start" after their
 * subclass's own error, as filesink and filesrc show: not the element's. */
static gboolean
base_class_fallback(GstMessage *msg)
{
  GError *err = NULL;
  gst_message_parse_error(msg, &err, NULL);
  const gboolean fallback = g_error_matches(err, GST_CORE_ERROR, GST_CORE_ERROR_STATE_CHANGE);
  g_error_free(err);
  return fallback;
}

/* The bus after NULL: the errors `at_fault` posted in all. */
static guint
errors_left(GstBus *bus, const char *at_fault)
{
  guint n = 0;
  GstMessage *msg;
  while ((msg = gst_bus_pop_filtered(bus, GST_MESSAGE_ERROR))) {
    n += error_from(msg, at_fault) && !base_class_fallback(msg);
    gst_message_unref(msg);
  }
  return n;
}

static char *
describe_run(void *data)
{
  run_state *r = data;
  return g_strdup_printf("ending \"%s\", run %u, %u slots: %s; %d frames out",
                         r->e ? r->e->name : "none", r->run, r->slots, r->state,
                         g_atomic_int_get(&r->received));
}

static void
expect_error_text(const ending *e, const char *text)
{
  if (e->error_has && !strstr(text, e->error_has))
    fail_msg("%s: the error \"%s\" does not say \"%s\"", e->name, text, e->error_has);
}

static gchar *
replace(const char *text, const char *token, const char *with)
{
  gchar **parts = g_strsplit(text, token, -1);
  gchar *joined = g_strjoinv(with, parts);
  g_strfreev(parts);
  return joined;
}

/* One run of `r->e`; `r` is the watchdog's view of it. */
static void
run_once(run_state *r, const char *dir)
{
  const ending *e = r->e;
  const guint run = r->run;
  test_watchdog_pet(END_WITHIN_S, r);
  r->state = "parsing";
  if (e->cpu_fail_at)
    g_setenv("PINGPONG_CPU_FAIL_AT", e->cpu_fail_at, TRUE);
  else
    g_unsetenv("PINGPONG_CPU_FAIL_AT");

  g_autofree gchar *slots = g_strdup_printf("%u", r->slots);
  g_autofree gchar *with_slots = replace(e->desc, "{slots}", slots);
  g_autofree gchar *desc = replace(with_slots, "{dir}", dir);
  GError *parse_error = NULL;
  GstElement *pipeline = gst_parse_launch(desc, &parse_error);
  if (e->ends == ENDS_REFUSED_LINK) {
    if (!parse_error)
      fail_msg("%s: \"%s\" linked", e->name, desc);
    expect_error_text(e, parse_error->message);
    g_error_free(parse_error);
    gst_clear_object(&pipeline);
    return;
  }
  if (parse_error)
    fail_msg("%s: \"%s\": %s", e->name, desc, parse_error->message);

  GstElement *out = gst_bin_get_by_name(GST_BIN(pipeline), "out");
  if (out) {
    GstAppSinkCallbacks callbacks = { .new_sample = on_sample };
    gst_app_sink_set_callbacks(GST_APP_SINK(out), &callbacks, r, NULL);
  }
  feed_frames(pipeline, e);
  GstBus *bus = gst_element_get_bus(pipeline);
  /* Errors posted while stopping still count: the bus keeps them past NULL. */
  gst_pipeline_set_auto_flush_bus(GST_PIPELINE(pipeline), FALSE);
  const char *at_fault = e->at_fault ? e->at_fault : "mlp";

  r->state = "going to PLAYING";
  const GstStateChangeReturn change = gst_element_set_state(pipeline, GST_STATE_PLAYING);
  if (e->ends == ENDS_REFUSED_START) {
    assert_int_equal(change, GST_STATE_CHANGE_FAILURE);
  } else {
    assert_int_not_equal(change, GST_STATE_CHANGE_FAILURE);
    if (e->flush_midway) {
      r->state = "waiting for preroll";
      GstMessage *done = gst_bus_timed_pop_filtered(bus, END_WITHIN_S * GST_SECOND,
                                                    GST_MESSAGE_ASYNC_DONE | GST_MESSAGE_ERROR);
      assert_non_null(done);
      assert_int_equal(GST_MESSAGE_TYPE(done), GST_MESSAGE_ASYNC_DONE);
      gst_message_unref(done);
      assert_true(gst_element_seek_simple(pipeline, GST_FORMAT_TIME,
                                          GST_SEEK_FLAG_FLUSH | GST_SEEK_FLAG_ACCURATE, 0));
    }
  }

  r->state = "waiting for EOS or an error";
  GstMessage *end = gst_bus_timed_pop_filtered(bus, END_WITHIN_S * GST_SECOND,
                                               GST_MESSAGE_EOS | GST_MESSAGE_ERROR);
  if (!end)
    fail_msg("%s: run %u with %u slots: no EOS or error within %d s", e->name, run, r->slots,
             END_WITHIN_S);
  if (e->ends == ENDS_EOS) {
    if (GST_MESSAGE_TYPE(end) == GST_MESSAGE_ERROR) {
      g_autofree gchar *text = error_text(end);
      fail_msg("%s: run %u: error instead of EOS: %s", e->name, run, text);
    }
  } else {
    if (!error_from(end, at_fault)) {
      g_autofree gchar *text =
          GST_MESSAGE_TYPE(end) == GST_MESSAGE_ERROR ? error_text(end) : g_strdup("EOS");
      fail_msg("%s: run %u: expected an error from %s, got %s from %s", e->name, run, at_fault,
               text, GST_OBJECT_NAME(GST_MESSAGE_SRC(end)));
    }
    g_autofree gchar *text = error_message(end);
    expect_error_text(e, text);
  }
  const guint first_error = error_from(end, at_fault);
  gst_message_unref(end);

  r->state = "going to NULL";
  assert_int_equal(gst_element_set_state(pipeline, GST_STATE_NULL), GST_STATE_CHANGE_SUCCESS);
  const guint errors = first_error + errors_left(bus, at_fault);
  if (errors > 1)
    fail_msg("%s: run %u: %s posted %u errors", e->name, run, at_fault, errors);

  const gint received = g_atomic_int_get(&r->received);
  if (e->frames_exactly >= 0 && received != e->frames_exactly)
    fail_msg("%s: run %u with %u slots: %d frames out, expected %d", e->name, run, r->slots,
             received, e->frames_exactly);
  if (e->frames_at_most >= 0 && received > e->frames_at_most)
    fail_msg("%s: run %u with %u slots: %d frames out, at most %d expected", e->name, run, r->slots,
             received, e->frames_at_most);
  assert_false(r->out_of_order);
  if (e->file_out) {
    g_autofree gchar *path = g_build_filename(dir, e->file_out, NULL);
    g_autofree gchar *bytes = NULL;
    gsize size = 0;
    assert_true(g_file_get_contents(path, &bytes, &size, NULL));
    assert_true(size > 8 && memcmp(bytes, "\x89PNG\r\n\x1a\n", 8) == 0);
    g_unlink(path);
  }
  gst_clear_object(&out);
  gst_object_unref(bus);
  gst_object_unref(pipeline);
}

/* A scratch folder with what the cases read: a FIFO where a model is asked
 * for, and a file of GRAY8 64×64 frames for uringsrc. */
static gchar *
make_scratch(void)
{
  gchar *dir = g_dir_make_tmp("pp-endings-XXXXXX", NULL);
  assert_non_null(dir);
  g_autofree gchar *fifo = g_build_filename(dir, "fifo.safetensors", NULL);
  assert_int_equal(mkfifo(fifo, 0600), 0);
  test_rng rng;
  test_rng_seed(&rng, 11);
  const gsize size = 64 * 64 * 20;
  g_autofree guint8 *frames = g_malloc(size);
  test_rng_fill_bytes(&rng, frames, size);
  g_autofree gchar *path = g_build_filename(dir, "frames", NULL);
  assert_true(g_file_set_contents(path, (const gchar *) frames, size, NULL));
  /* Ten whole frames and 1000 bytes of an eleventh. */
  g_autofree gchar *partial = g_build_filename(dir, "frames-partial", NULL);
  assert_true(g_file_set_contents(partial, (const gchar *) frames, 64 * 64 * 10 + 1000, NULL));
  return dir;
}

static void
remove_scratch(gchar *dir)
{
  const char *names[] = { "fifo.safetensors", "frames", "frames-partial" };
  for (guint i = 0; i < G_N_ELEMENTS(names); i++) {
    g_autofree gchar *path = g_build_filename(dir, names[i], NULL);
    g_unlink(path);
  }
  g_rmdir(dir);
  g_free(dir);
}

static void
test_every_ending(void **state)
{
  (void) state;
  const guint many = g_getenv("PP_TEST_ENDINGS_RUNS")
                         ? (guint) g_ascii_strtoull(g_getenv("PP_TEST_ENDINGS_RUNS"), NULL, 10)
                         : 200;
  gchar *dir = make_scratch();
  run_state r = { .state = "starting" };
  test_watchdog_start(END_WITHIN_S, describe_run, &r);
  for (guint i = 0; i < G_N_ELEMENTS(endings); i++) {
    const ending *e = &endings[i];
    GstElementFactory *needed = e->needs ? gst_element_factory_find(e->needs) : NULL;
    if (e->needs && !needed) {
      print_message("skipped \"%s\": no %s here\n", e->name, e->needs);
      continue;
    }
    gst_clear_object(&needed);
    const guint runs = e->many ? many : MAX(many / 10, 1);
    const gint64 start = g_get_monotonic_time();
    for (guint run = 0; run < runs; run++) {
      r = (run_state){ .e = e, .run = run, .slots = 1 + run % 4, .last_pts = GST_CLOCK_TIME_NONE };
      run_once(&r, dir);
    }
    print_message("%-40s %4u runs, %6.1f ms each\n", e->name, runs,
                  (g_get_monotonic_time() - start) / 1e3 / runs);
  }
  test_watchdog_stop();
  g_unsetenv("PINGPONG_CPU_FAIL_AT");
  remove_scratch(dir);
}

int
main(int argc, char **argv)
{
  gst_init(&argc, &argv);
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_every_ending),
  };
  return test_gst_run(tests, NULL);
}
