// SPDX-License-Identifier: LGPL-2.1-or-later
/* uringsrc in place of filesrc for every kind of reader: demuxers and
 * typefind pulling ranges (qtdemux, matroskademux, decodebin, typefind),
 * rawvideoparse pulling odd blocksizes, each frame for frame against
 * filesrc, buffered and O_DIRECT, many runs; a file of frames that ends in
 * a partial one (dropped, one warning naming its size); and uringsink on a
 * full filesystem (one error, the file a prefix of what was written).
 *
 * PP_TEST_READER_RUNS: runs across the readers (200 unless set).
 * PP_TEST_FULL_DIR: a small filesystem of its own for the full-disk test
 * (tests/elements/full-disk.sh mounts one); skipped without. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <glib/gstdio.h>
#include <gst/app/gstappsink.h>
#include <gst/gst.h>
#include <string.h>

#include "gstmain.h"
#include "piperun.h"
#include "testutil.h"

#define FRAME_W 64
#define FRAME_H 64
#define N_FRAMES 10
#define PARTIAL 1000

static char *dir;

static char *
path_of(const char *name)
{
  return g_build_filename(dir, name, NULL);
}

static gboolean
have(const char *factory)
{
  GstElementFactory *f = gst_element_factory_find(factory);
  const gboolean found = f != NULL;
  gst_clear_object(&f);
  return found;
}

/* Runs `desc` to EOS, where an `appsink name=out` collects every buffer:
 * one line per buffer, "pts size checksum", and the caps it first had.
 * Fails the test on an error. */
static gchar *
frames_of(const char *desc)
{
  GError *err = NULL;
  GstElement *pipeline = gst_parse_launch(desc, &err);
  if (!pipeline || err)
    fail_msg("%s: %s", desc, err ? err->message : "?");
  GstElement *out = gst_bin_get_by_name(GST_BIN(pipeline), "out");
  assert_non_null(out);
  GstBus *bus = gst_element_get_bus(pipeline);
  gst_element_set_state(pipeline, GST_STATE_PLAYING);
  GString *frames = g_string_new(NULL);
  GstSample *sample;
  while ((sample = gst_app_sink_pull_sample(GST_APP_SINK(out)))) {
    GstBuffer *b = gst_sample_get_buffer(sample);
    if (frames->len == 0) {
      g_autofree gchar *caps = gst_caps_to_string(gst_sample_get_caps(sample));
      g_string_append_printf(frames, "caps %s\n", caps);
    }
    GstMapInfo map;
    assert_true(gst_buffer_map(b, &map, GST_MAP_READ));
    g_autofree gchar *sum = g_compute_checksum_for_data(G_CHECKSUM_SHA1, map.data, map.size);
    g_string_append_printf(frames, "%" GST_TIME_FORMAT " %" G_GSIZE_FORMAT " %s\n",
                           GST_TIME_ARGS(GST_BUFFER_PTS(b)), map.size, sum);
    gst_buffer_unmap(b, &map);
    gst_sample_unref(sample);
  }
  GstMessage *msg =
      gst_bus_timed_pop_filtered(bus, 30 * GST_SECOND, GST_MESSAGE_EOS | GST_MESSAGE_ERROR);
  assert_non_null(msg);
  if (GST_MESSAGE_TYPE(msg) == GST_MESSAGE_ERROR) {
    GError *e = NULL;
    gst_message_parse_error(msg, &e, NULL);
    fail_msg("%s: %s", desc, e->message);
  }
  gst_message_unref(msg);
  gst_element_set_state(pipeline, GST_STATE_NULL);
  gst_object_unref(bus);
  gst_object_unref(out);
  gst_object_unref(pipeline);
  return g_string_free(frames, FALSE);
}

static void
encode(const char *desc)
{
  g_autofree gchar *error = test_run_pipeline(desc, NULL);
  if (error)
    fail_msg("%s: %s", desc, error);
}

/* The clips and the raw file the readers read. */
static int
make_inputs(void **state)
{
  (void) state;
  g_autofree char *mkv = path_of("clip.mkv"), *mp4 = path_of("clip.mp4");
  g_autofree char *raw = path_of("frames.raw");
  const char *video = "videotestsrc num-buffers=45 pattern=ball ! "
                      "video/x-raw,format=I420,width=160,height=120,framerate=30/1";
  if (have("vp8enc") && have("matroskamux")) {
    g_autofree gchar *d =
        g_strdup_printf("%s ! vp8enc ! matroskamux ! filesink location=%s", video, mkv);
    encode(d);
  }
  if (have("x264enc") && have("mp4mux")) {
    g_autofree gchar *d =
        g_strdup_printf("%s ! x264enc ! h264parse ! mp4mux ! filesink location=%s", video, mp4);
    encode(d);
  }
  test_rng rng;
  test_rng_seed(&rng, 5);
  const gsize size = FRAME_W * FRAME_H * N_FRAMES + PARTIAL;
  g_autofree guint8 *bytes = g_malloc(size);
  test_rng_fill_bytes(&rng, bytes, size);
  assert_true(g_file_set_contents(raw, (const gchar *) bytes, size, NULL));
  return 0;
}

static int
remove_inputs(void **state)
{
  (void) state;
  const char *names[] = { "clip.mkv", "clip.mp4", "frames.raw" };
  for (guint i = 0; i < G_N_ELEMENTS(names); i++) {
    g_autofree char *p = path_of(names[i]);
    g_unlink(p);
  }
  return 0;
}

typedef struct {
  const char *name;
  const char *file;
  const char *source_args; /* after location= */
  const char *rest;        /* after the source, before appsink */
  const char *needs[2];
} reader;

static const reader readers[] = {
  { "qtdemux", "clip.mp4", "", "qtdemux ! h264parse ! avdec_h264", { "x264enc", "avdec_h264" } },
  { "matroskademux", "clip.mkv", "", "matroskademux ! vp8dec", { "vp8dec" } },
  { "decodebin", "clip.mkv", "", "decodebin", { "vp8dec" } },
  { "decodebin, mp4", "clip.mp4", "", "decodebin", { "x264enc", "avdec_h264" } },
  { "typefind", "clip.mkv", "", "typefind", { "vp8enc" } },
  { "rawvideoparse, blocksize 1000",
    "frames.raw",
    " blocksize=1000",
    "rawvideoparse format=gray8 width=64 height=64",
    { NULL } },
  { "rawvideoparse, blocksize 4095",
    "frames.raw",
    " blocksize=4095",
    "rawvideoparse format=gray8 width=64 height=64",
    { NULL } },
  { "rawvideoparse, blocksize 1 MiB",
    "frames.raw",
    " blocksize=1048576",
    "rawvideoparse format=gray8 width=64 height=64",
    { NULL } },
};

static gboolean
reader_here(const reader *r)
{
  for (guint i = 0; i < G_N_ELEMENTS(r->needs) && r->needs[i]; i++)
    if (!have(r->needs[i]))
      return FALSE;
  g_autofree char *path = path_of(r->file);
  return g_file_test(path, G_FILE_TEST_EXISTS);
}

static gchar *
reader_frames(const reader *r, const char *source)
{
  g_autofree char *path = path_of(r->file);
  g_autofree gchar *desc = g_strdup_printf("%s location=%s%s ! %s ! appsink name=out sync=false",
                                           source, path, r->source_args, r->rest);
  return frames_of(desc);
}

/* uringsrc gives each reader what filesrc gives it: the same buffers, the
 * same timestamps, the same caps; run after run, buffered and O_DIRECT
 * (uringsrc's exact reads then align themselves). */
static void
test_every_reader_as_with_filesrc(void **state)
{
  (void) state;
  const guint runs = g_getenv("PP_TEST_READER_RUNS")
                         ? (guint) g_ascii_strtoull(g_getenv("PP_TEST_READER_RUNS"), NULL, 10)
                         : 200;
  gchar *want[G_N_ELEMENTS(readers)] = { NULL };
  guint here = 0;
  for (guint i = 0; i < G_N_ELEMENTS(readers); i++) {
    if (!reader_here(&readers[i])) {
      print_message("skipped %s: its encoder or decoder is not installed\n", readers[i].name);
      continue;
    }
    want[i] = reader_frames(&readers[i], "filesrc");
    assert_true(strlen(want[i]) > 100); /* frames came */
    here++;
  }
  assert_true(here >= 4); /* -base and -good alone give the raw and VP8 readers */
  guint done = 0;
  for (guint run = 0; done < runs; run++) {
    const guint i = run % G_N_ELEMENTS(readers);
    if (!want[i])
      continue;
    /* Every third run O_DIRECT, which needs whole 4096-byte blocks
     * pushed: the raw readers' blocksizes are not. */
    const gboolean direct = run % 3 == 2 && readers[i].source_args[0] == '\0';
    g_autofree gchar *got =
        reader_frames(&readers[i], direct ? "uringsrc direct=true" : "uringsrc");
    if (strcmp(got, want[i]) != 0)
      fail_msg("%s, run %u%s: uringsrc gave\n%s\nwhere filesrc gave\n%s", readers[i].name, run,
               direct ? " (direct)" : "", got, want[i]);
    done++;
  }
  for (guint i = 0; i < G_N_ELEMENTS(readers); i++)
    g_free(want[i]);
}

/* Frames by caps from a file that ends in a partial one: the whole frames
 * out, the partial one dropped with one warning that gives its size. */
static void
test_partial_last_frame(void **state)
{
  (void) state;
  g_autofree char *raw = path_of("frames.raw");
  g_autofree gchar *desc = g_strdup_printf(
      "uringsrc location=%s caps=video/x-raw,format=GRAY8,width=%d,height=%d,framerate=30/1 ! "
      "appsink name=out sync=false",
      raw, FRAME_W, FRAME_H);
  GstElement *pipeline = gst_parse_launch(desc, NULL);
  assert_non_null(pipeline);
  gst_pipeline_set_auto_flush_bus(GST_PIPELINE(pipeline), FALSE);
  GstElement *out = gst_bin_get_by_name(GST_BIN(pipeline), "out");
  gst_element_set_state(pipeline, GST_STATE_PLAYING);
  guint frames = 0;
  GstSample *sample;
  while ((sample = gst_app_sink_pull_sample(GST_APP_SINK(out)))) {
    assert_int_equal(gst_buffer_get_size(gst_sample_get_buffer(sample)), FRAME_W * FRAME_H);
    frames++;
    gst_sample_unref(sample);
  }
  gst_element_set_state(pipeline, GST_STATE_NULL);
  assert_int_equal(frames, N_FRAMES);
  GstBus *bus = gst_element_get_bus(pipeline);
  guint warnings = 0, errors = 0;
  GstMessage *msg;
  while ((msg = gst_bus_pop_filtered(bus, GST_MESSAGE_WARNING | GST_MESSAGE_ERROR))) {
    if (GST_MESSAGE_TYPE(msg) == GST_MESSAGE_ERROR) {
      errors++;
    } else {
      GError *e = NULL;
      gst_message_parse_warning(msg, &e, NULL);
      g_autofree gchar *size = g_strdup_printf("partial frame of %d bytes", PARTIAL);
      if (!strstr(e->message, size))
        fail_msg("the warning \"%s\" does not say \"%s\"", e->message, size);
      g_error_free(e);
      warnings++;
    }
    gst_message_unref(msg);
  }
  assert_int_equal(errors, 0);
  assert_int_equal(warnings, 1);
  gst_object_unref(bus);
  gst_object_unref(out);
  gst_object_unref(pipeline);
}

/* The errors `name` posted in a run, the run's bus kept past NULL. */
static guint
errors_from(GstElement *pipeline, const char *name, gchar **first)
{
  GstBus *bus = gst_element_get_bus(pipeline);
  guint n = 0;
  GstMessage *msg;
  while ((msg = gst_bus_pop_filtered(bus, GST_MESSAGE_ERROR))) {
    if (g_str_equal(GST_OBJECT_NAME(GST_MESSAGE_SRC(msg)), name)) {
      GError *e = NULL;
      gst_message_parse_error(msg, &e, NULL);
      if (n++ == 0 && first)
        *first = g_strdup(e->message);
      g_error_free(e);
    }
    gst_message_unref(msg);
  }
  gst_object_unref(bus);
  return n;
}

static void
write_to(const char *path, guint depth, guint *errors, gchar **first)
{
  g_autofree gchar *desc = g_strdup_printf(
      "videotestsrc num-buffers=60 pattern=ball ! video/x-raw,format=GRAY8,width=256,height=256 ! "
      "uringsink name=sink queue-depth=%u location=%s",
      depth, path);
  GstElement *pipeline = gst_parse_launch(desc, NULL);
  assert_non_null(pipeline);
  gst_pipeline_set_auto_flush_bus(GST_PIPELINE(pipeline), FALSE);
  GstBus *bus = gst_element_get_bus(pipeline);
  gst_element_set_state(pipeline, GST_STATE_PLAYING);
  GstMessage *end =
      gst_bus_timed_pop_filtered(bus, 30 * GST_SECOND, GST_MESSAGE_EOS | GST_MESSAGE_ERROR);
  assert_non_null(end);
  /* Back on the bus for the count. */
  gst_bus_post(bus, end);
  gst_element_set_state(pipeline, GST_STATE_NULL);
  *errors = errors_from(pipeline, "sink", first);
  gst_object_unref(bus);
  gst_object_unref(pipeline);
}

/* A full filesystem with every write of the queue in flight failing:
 * exactly one error, saying so, and the file a prefix of the stream. */
static void
test_full_disk_one_error(void **state)
{
  (void) state;
  const char *full = g_getenv("PP_TEST_FULL_DIR");
  if (!full) {
    print_message("skipped: PP_TEST_FULL_DIR names no small filesystem (full-disk.sh)\n");
    return;
  }
  g_autofree char *whole = path_of("whole.raw");
  guint errors = 0;
  write_to(whole, 8, &errors, NULL);
  assert_int_equal(errors, 0);
  g_autofree gchar *want = NULL;
  gsize want_len = 0;
  assert_true(g_file_get_contents(whole, &want, &want_len, NULL));
  g_autofree char *cut = g_build_filename(full, "out.raw", NULL);
  for (guint run = 0; run < 20; run++) {
    g_autofree gchar *message = NULL;
    write_to(cut, 8, &errors, &message);
    if (errors != 1)
      fail_msg("run %u: uringsink posted %u errors on a full filesystem", run, errors);
    assert_non_null(strstr(message, "No space left"));
    g_autofree gchar *got = NULL;
    gsize got_len = 0;
    assert_true(g_file_get_contents(cut, &got, &got_len, NULL));
    assert_true(got_len > 0 && got_len < want_len);
    assert_memory_equal(got, want, got_len);
    g_unlink(cut);
  }
  g_unlink(whole);
}

int
main(int argc, char **argv)
{
  gst_init(&argc, &argv);
  /* Not /tmp: it may be tmpfs, which refuses O_DIRECT. */
  dir = g_build_filename(g_getenv("PP_BUILD_ROOT") ? g_getenv("PP_BUILD_ROOT") : ".",
                         "uring-readers-XXXXXX", NULL);
  assert_non_null(g_mkdtemp(dir));
  const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown(test_every_reader_as_with_filesrc, make_inputs, remove_inputs),
    cmocka_unit_test_setup_teardown(test_partial_last_frame, make_inputs, remove_inputs),
    cmocka_unit_test(test_full_disk_one_error),
  };
  if (g_getenv("PP_TEST_FILTER"))
    cmocka_set_test_filter(g_getenv("PP_TEST_FILTER"));
  const int failed = cmocka_run_group_tests(tests, NULL, NULL);
  g_rmdir(dir);
  g_free(dir);
  return test_gst_finish(failed);
}
