// SPDX-License-Identifier: LGPL-2.1-or-later
/* Frame timestamps: gst_pp_frame_pts against exact integer arithmetic for
 * every frame up to 10^6 at NTSC's 30000/1001 and other rates, and
 * uringsrc's buffers, read as frames at 30000/1001, carrying them with
 * durations that add up to the next frame's PTS. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <glib/gstdio.h>
#include <gst/app/gstappsink.h>
#include <gst/gst.h>
#include <unistd.h>

#include "frametime.h"
#include "gstmain.h"
#include "testutil.h"

/* floor(n · 10^9 · d / f), exactly. */
static guint64
exact_pts(guint64 n, guint64 f, guint64 d)
{
  return (guint64) ((unsigned __int128) n * GST_SECOND * d / f);
}

static void
test_pts_exact_to_a_million(void **state)
{
  (void) state;
  const gint rates[][2] = { { 30000, 1001 }, { 60000, 1001 }, { 24000, 1001 },
                            { 25, 1 },       { 30, 1 },       { 7, 3 } };
  for (guint r = 0; r < G_N_ELEMENTS(rates); r++)
    for (guint64 n = 0; n <= 1000000; n++)
      if (gst_pp_frame_pts(n, rates[r][0], rates[r][1]) != exact_pts(n, rates[r][0], rates[r][1]))
        fail_msg("%d/%d, frame %" G_GUINT64_FORMAT ": %" G_GUINT64_FORMAT
                 " instead of %" G_GUINT64_FORMAT,
                 rates[r][0], rates[r][1], n, gst_pp_frame_pts(n, rates[r][0], rates[r][1]),
                 exact_pts(n, rates[r][0], rates[r][1]));
  /* Ten hours at 30000/1001: a sum of rounded durations would be 0.7 ms off. */
  const guint64 ten_hours = 1078920;
  assert_int_equal(gst_pp_frame_pts(ten_hours, 30000, 1001), exact_pts(ten_hours, 30000, 1001));
  assert_true(ten_hours * gst_util_uint64_scale_int(GST_SECOND, 1001, 30000) !=
              gst_pp_frame_pts(ten_hours, 30000, 1001));
  assert_int_equal(gst_pp_frame_pts(5, 0, 1), GST_CLOCK_TIME_NONE);
}

enum { FRAMES = 400, WIDTH = 8, HEIGHT = 2 };

static void
test_uringsrc_timestamps(void **state)
{
  (void) state;
  GstElementFactory *factory = gst_element_factory_find("uringsrc");
  if (!factory)
    skip();
  gst_object_unref(factory);
  gchar *path = NULL;
  const gint fd = g_file_open_tmp("pp-frames-XXXXXX.raw", &path, NULL);
  assert_true(fd >= 0);
  close(fd);
  test_rng rng;
  test_rng_seed(&rng, 5);
  guint8 bytes[FRAMES * WIDTH * HEIGHT];
  test_rng_fill_bytes(&rng, bytes, sizeof bytes);
  assert_true(g_file_set_contents(path, (const gchar *) bytes, sizeof bytes, NULL));

  g_autofree gchar *desc =
      g_strdup_printf("uringsrc location=%s caps=video/x-raw,format=GRAY8,width=%d,height=%d,"
                      "framerate=30000/1001 ! appsink name=out sync=false",
                      path, WIDTH, HEIGHT);
  GstElement *pipeline = gst_parse_launch(desc, NULL);
  assert_non_null(pipeline);
  GstElement *out = gst_bin_get_by_name(GST_BIN(pipeline), "out");
  assert_int_not_equal(gst_element_set_state(pipeline, GST_STATE_PLAYING),
                       GST_STATE_CHANGE_FAILURE);
  guint n = 0;
  GstSample *sample;
  while ((sample = gst_app_sink_try_pull_sample(GST_APP_SINK(out), 10 * GST_SECOND))) {
    GstBuffer *buf = gst_sample_get_buffer(sample);
    assert_int_equal(gst_buffer_get_size(buf), WIDTH * HEIGHT);
    assert_int_equal(GST_BUFFER_PTS(buf), exact_pts(n, 30000, 1001));
    assert_int_equal(GST_BUFFER_PTS(buf) + GST_BUFFER_DURATION(buf), exact_pts(n + 1, 30000, 1001));
    gst_sample_unref(sample);
    n++;
  }
  assert_int_equal(n, FRAMES);
  gst_element_set_state(pipeline, GST_STATE_NULL);
  gst_object_unref(out);
  gst_object_unref(pipeline);
  g_unlink(path);
  g_free(path);
}

int
main(int argc, char **argv)
{
  gst_init(&argc, &argv);
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_pts_exact_to_a_million),
    cmocka_unit_test(test_uringsrc_timestamps),
  };
  return test_gst_run(tests, NULL);
}
