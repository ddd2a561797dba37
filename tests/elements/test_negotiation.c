// SPDX-License-Identifier: LGPL-2.1-or-later
/* cudamlp's negotiation: the caps query answers with what the model can
 * take, so videoconvert and videoscale upstream pick a frame that fits; a
 * frame that cannot is refused once, naming the model's K and the caps;
 * formats cudamlp does not read and short buffers are errors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <glib/gstdio.h>
#include <gst/gst.h>
#include <gst/video/video.h>
#include <string.h>

#include "mlpharness.h"
#include "piperun.h"
#include "testutil.h"
#include "gstmain.h"

/* The backend under test: "cpu" by default, "cuda" in the GPU suite. */
static const char *backend_name = "cpu";
#define make_mlp(...) test_make_mlp(backend_name, __VA_ARGS__)

static void
test_k_mismatch_is_not_negotiated(void **state)
{
  (void) state;
  g_autofree gchar *path = test_write_small_model(FALSE);
  GstBus *bus;
  GstHarness *h = test_harness_for(make_mlp("model", path, NULL), &bus);
  gst_harness_set_src_caps_str(h, "video/x-raw,format=GRAY8,width=5,height=4,framerate=0/1");
  assert_int_equal(gst_harness_push(h, gst_buffer_new_allocate(NULL, 8 * 4, NULL)),
                   GST_FLOW_NOT_NEGOTIATED);
  g_autofree gchar *text = test_bus_text(bus, GST_MESSAGE_ERROR);
  assert_non_null(text);
  if (!strstr(text, "tensor '0.weight' is 4×3 but the frame gives K=5"))
    fail_msg("unexpected error: %s", text);
  test_harness_finish(h, bus);

  /* The same model takes K=3: RGB frames one pixel wide. */
  h = test_harness_for(make_mlp("model", path, NULL), &bus);
  gst_harness_set_src_caps_str(h, "video/x-raw,format=RGB,width=1,height=2,framerate=0/1");
  assert_int_equal(gst_harness_push(h, gst_buffer_new_allocate(NULL, 8, NULL)), GST_FLOW_OK);
  GstBuffer *out = gst_harness_pull(h);
  assert_int_equal(gst_buffer_get_size(out), 2 * 2 * sizeof(float));
  gst_buffer_unref(out);
  test_harness_finish(h, bus);
  g_unlink(path);
}

/* A source that offers every format and size negotiates frames that give
 * the model file its K (rows: K = width × channels = 3 here), instead of
 * its first format and failing. */
static void
test_caps_follow_the_model(void **state)
{
  (void) state;
  g_autofree gchar *path = test_write_small_model(FALSE);
  g_autofree gchar *desc = g_strdup_printf(
      "videotestsrc num-buffers=5 ! cudamlp name=mlp backend=%s model=%s ! fakesink", backend_name,
      path);
  GstElement *pipeline = gst_parse_launch(desc, NULL);
  GstBus *bus = gst_element_get_bus(pipeline);
  gst_element_set_state(pipeline, GST_STATE_PLAYING);
  GstMessage *msg =
      gst_bus_timed_pop_filtered(bus, 60 * GST_SECOND, GST_MESSAGE_EOS | GST_MESSAGE_ERROR);
  assert_non_null(msg);
  if (GST_MESSAGE_TYPE(msg) == GST_MESSAGE_ERROR) {
    GError *error = NULL;
    gchar *debug = NULL;
    gst_message_parse_error(msg, &error, &debug);
    fail_msg("%s (%s)", error->message, debug);
  }
  gst_message_unref(msg);
  GstElement *mlp = gst_bin_get_by_name(GST_BIN(pipeline), "mlp");
  GstPad *pad = gst_element_get_static_pad(mlp, "sink");
  GstCaps *caps = gst_pad_get_current_caps(pad);
  GstVideoInfo info;
  assert_true(gst_video_info_from_caps(&info, caps));
  const guint channels = GST_VIDEO_INFO_FORMAT(&info) == GST_VIDEO_FORMAT_GRAY8 ? 1 : 3;
  assert_int_equal(GST_VIDEO_INFO_WIDTH(&info) * channels, 3);
  gst_caps_unref(caps);
  gst_object_unref(pad);
  gst_object_unref(mlp);
  gst_element_set_state(pipeline, GST_STATE_NULL);
  gst_object_unref(bus);
  gst_object_unref(pipeline);
  g_unlink(path);
}

/* From a fixed 320×240 I420 source, videoconvert ! videoscale pick frames
 * that give a model its K: for mapping=rows a width (K = width ×
 * channels), for mapping=patches the channel count (K = p·p·channels).
 * Where no frame can, the error names the model's K and the caps. */
static void
test_videoscale_picks_a_fitting_frame(void **state)
{
  (void) state;
  static const struct {
    const char *settings;
    guint k;
  } cases[] = {
    { "layers=\"linear(192,4), relu, linear(4,1)\"", 192 },
    { "layers=\"linear(100,4), relu, linear(4,1)\"", 100 },
    { "mapping=patches patch-size=40 layers=\"linear(1600,4), relu, linear(4,1)\"", 1600 },
    { "mapping=patches patch-size=8 layers=\"linear(192,4), relu, linear(4,1)\"", 192 },
  };
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    g_autofree gchar *desc = g_strdup_printf(
        "videotestsrc num-buffers=3 ! video/x-raw,format=I420,width=320,height=240 ! videoconvert "
        "! videoscale ! cudamlp name=mlp backend=%s %s ! fakesink",
        backend_name, cases[i].settings);
    GstCaps *caps = NULL;
    g_autofree gchar *error = test_run_pipeline_caps(desc, "mlp", &caps);
    if (error || !caps)
      fail_msg("%s: %s", cases[i].settings, error);
    GstVideoInfo info;
    assert_true(gst_video_info_from_caps(&info, caps));
    const guint channels = GST_VIDEO_INFO_FORMAT(&info) == GST_VIDEO_FORMAT_GRAY8 ? 1
                           : GST_VIDEO_INFO_HAS_ALPHA(&info) ||
                                   GST_VIDEO_INFO_FORMAT(&info) == GST_VIDEO_FORMAT_RGBx ||
                                   GST_VIDEO_INFO_FORMAT(&info) == GST_VIDEO_FORMAT_BGRx
                               ? (GST_VIDEO_INFO_HAS_ALPHA(&info) ? 4 : 3)
                               : 3;
    const gboolean rows = !strstr(cases[i].settings, "patches");
    const guint patch = strstr(cases[i].settings, "patch-size=40") ? 40 : 8;
    const guint k = rows ? GST_VIDEO_INFO_WIDTH(&info) * channels : patch * patch * channels;
    if (k != cases[i].k)
      fail_msg("%s: negotiated %" GST_PTR_FORMAT ", K=%u", cases[i].settings, caps, k);
    gst_caps_unref(caps);
  }

  g_autofree gchar *desc = g_strdup_printf(
      "videotestsrc num-buffers=3 ! videoconvert ! videoscale ! cudamlp name=mlp backend=%s "
      "mapping=patches layers=\"linear(1000,4), relu, linear(4,1)\" ! fakesink",
      backend_name);
  GstCaps *caps = NULL;
  g_autofree gchar *error = test_run_pipeline_caps(desc, "mlp", &caps);
  gst_clear_caps(&caps);
  if (!error || !strstr(error, "takes 1000 inputs") || !strstr(error, "video/x-raw"))
    fail_msg("unexpected error: %s", error);
}

static void
test_unacceptable_caps(void **state)
{
  (void) state;
  GstBus *bus;
  GstHarness *h = test_harness_for(make_mlp(NULL, NULL), &bus);
  /* Not in the template: refused before the element sees it. */
  gst_harness_set_src_caps_str(h, "video/x-raw,format=Y444,width=8,height=8,framerate=0/1");
  assert_int_equal(gst_harness_push(h, gst_buffer_new_allocate(NULL, 192, NULL)),
                   GST_FLOW_NOT_NEGOTIATED);
  test_harness_finish(h, bus);

  h = test_harness_for(make_mlp(NULL, NULL), &bus);
  gst_harness_set_src_caps_str(h, "other/tensors,format=static,num_tensors=1,types=float32,"
                                  "dimensions=(string)8:0:1:1,framerate=0/1");
  assert_int_equal(gst_harness_push(h, gst_buffer_new_allocate(NULL, 32, NULL)),
                   GST_FLOW_NOT_NEGOTIATED);
  g_autofree gchar *text = test_bus_text(bus, GST_MESSAGE_ERROR);
  assert_non_null(text);
  assert_non_null(strstr(text, "dimensions"));
  test_harness_finish(h, bus);
}

static void
test_short_buffer_is_an_error(void **state)
{
  (void) state;
  GstBus *bus;
  GstHarness *h = test_harness_for(make_mlp(NULL, NULL), &bus);
  gst_harness_set_src_caps_str(h, "video/x-raw,format=RGB,width=10,height=10,framerate=0/1");
  /* RGB rows are padded to 32 bytes: the frame needs 320. */
  assert_int_equal(gst_harness_push(h, gst_buffer_new_allocate(NULL, 300, NULL)), GST_FLOW_ERROR);
  g_autofree gchar *text = test_bus_text(bus, GST_MESSAGE_ERROR);
  assert_non_null(text);
  assert_non_null(strstr(text, "A buffer of 300 bytes came where the caps make a frame 320 bytes"));
  test_harness_finish(h, bus);
}

int
main(int argc, char **argv)
{
  gst_init(&argc, &argv);
  if (!test_gst_backend(&backend_name))
    return 77;
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_k_mismatch_is_not_negotiated),
    cmocka_unit_test(test_caps_follow_the_model),
    cmocka_unit_test(test_videoscale_picks_a_fitting_frame),
    cmocka_unit_test(test_unacceptable_caps),
    cmocka_unit_test(test_short_buffer_is_an_error),
  };
  return test_gst_run(tests, test_count_live_objects);
}
