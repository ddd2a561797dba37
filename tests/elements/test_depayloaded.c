// SPDX-License-Identifier: LGPL-2.1-or-later
/* Frames that come over the network pair's transport (gdppay !
 * gdpdepay, as pipelines/receiver.sh gets them) reach cudamlp in its own
 * allocator's memory, which gdpdepay takes from the ALLOCATION query, and
 * give the same scores as the frames straight from the source. With the
 * CUDA backend that memory is pinned, so the GPU reads the frame in place
 * (no staging copy). PP_TEST_BACKEND=cuda runs it on the GPU. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <gst/app/gstappsink.h>
#include <gst/gst.h>
#include <string.h>

#include "testutil.h"
#include "gstmain.h"

static const char *backend_name = "cpu";

typedef struct {
  gint frames, ours;
} seen_memory;

static GstPadProbeReturn
check_memory(GstPad *pad, GstPadProbeInfo *info, gpointer data)
{
  seen_memory *seen = data;
  GstBuffer *buf = GST_PAD_PROBE_INFO_BUFFER(info);
  (void) pad;
  seen->frames++;
  if (gst_buffer_n_memory(buf) == 1 &&
      gst_memory_is_type(gst_buffer_peek_memory(buf, 0), "PingpongPinnedMemory"))
    seen->ours++;
  return GST_PAD_PROBE_OK;
}

enum { FRAMES = 40 };

/* The scores of FRAMES moving-ball frames, with `between` (or nothing)
 * between the source and cudamlp; `seen` counts what cudamlp got. */
static GByteArray *
scores(const char *between, seen_memory *seen)
{
  g_autofree gchar *desc = g_strdup_printf(
      "videotestsrc num-buffers=%d pattern=ball ! video/x-raw,format=GRAY8,width=64,height=32 ! "
      "%s cudamlp name=mlp backend=%s slots=2 hidden-size=16 ! appsink name=out sync=false",
      FRAMES, between, backend_name);
  GError *err = NULL;
  GstElement *pipeline = gst_parse_launch(desc, &err);
  assert_null(err);
  GstElement *mlp = gst_bin_get_by_name(GST_BIN(pipeline), "mlp");
  GstPad *pad = gst_element_get_static_pad(mlp, "sink");
  gst_pad_add_probe(pad, GST_PAD_PROBE_TYPE_BUFFER, check_memory, seen, NULL);
  gst_object_unref(pad), gst_object_unref(mlp);
  GstElement *sink = gst_bin_get_by_name(GST_BIN(pipeline), "out");
  assert_int_not_equal(gst_element_set_state(pipeline, GST_STATE_PLAYING),
                       GST_STATE_CHANGE_FAILURE);
  GByteArray *out = g_byte_array_new();
  GstSample *sample;
  while ((sample = gst_app_sink_try_pull_sample(GST_APP_SINK(sink), 20 * GST_SECOND))) {
    GstMapInfo map;
    gst_buffer_map(gst_sample_get_buffer(sample), &map, GST_MAP_READ);
    g_byte_array_append(out, map.data, map.size);
    gst_buffer_unmap(gst_sample_get_buffer(sample), &map);
    gst_sample_unref(sample);
  }
  assert_true(gst_app_sink_is_eos(GST_APP_SINK(sink)));
  gst_element_set_state(pipeline, GST_STATE_NULL);
  gst_object_unref(sink), gst_object_unref(pipeline);
  return out;
}

static void
test_gdpdepay_frames_in_our_memory(void **state)
{
  (void) state;
  seen_memory direct = { 0 }, paired = { 0 };
  GByteArray *want = scores("", &direct);
  GByteArray *got = scores("gdppay ! gdpdepay !", &paired);
  /* Frames from videotestsrc come from cudamlp's pool, gdpdepay's from its
   * allocator: each frame in one block of ours either way. */
  assert_int_equal(direct.frames, FRAMES);
  assert_int_equal(direct.ours, FRAMES);
  assert_int_equal(paired.frames, FRAMES);
  assert_int_equal(paired.ours, FRAMES);
  assert_int_equal(got->len, want->len);
  assert_true(want->len > 0);
  /* Same frames, same model, same backend: the same bytes. */
  assert_memory_equal(got->data, want->data, want->len);
  g_byte_array_unref(want), g_byte_array_unref(got);
}

int
main(int argc, char **argv)
{
  gst_init(&argc, &argv);
  if (!test_gst_backend(&backend_name))
    return 77;
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_gdpdepay_frames_in_our_memory),
  };
  return test_gst_run(tests, NULL);
}
