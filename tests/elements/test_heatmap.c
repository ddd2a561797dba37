// SPDX-License-Identifier: LGPL-2.1-or-later
/* cudamlp output=video-meta and scoreoverlay: a frame whose left half is
 * dark and right half bright, through a model whose score is the mean
 * brightness of its input, drawn and read back: the right half takes the
 * colormap's high end and the left half its low end, exactly at opacity 1
 * and within 1/255 of the blend formula at 0.5, in RGB; in I420 within the
 * error of an 8-bit YUV round trip. The meta survives a tee and two queues
 * with the scores a model gives; rows draw as a bar; frames without the
 * meta pass unchanged. PP_TEST_BACKEND=cuda runs the same on the GPU. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <glib/gstdio.h>
#include <gst/app/gstappsink.h>
#include <gst/app/gstappsrc.h>
#include <gst/gst.h>
#include <gst/video/video.h>
#include <math.h>
#include <string.h>
#include <unistd.h>

#include "colormaps.h"
#include "pingpong/ppscores.h"
#include "testutil.h"
#include "gstmain.h"

enum { W = 64, H = 32, PATCH = 16, DARK = 20, BRIGHT = 230 };

static const char *backend_name = "cpu";

/* Linear(k, 1), every weight 1/k, no bias, nothing after: the score of a
 * sample is the mean of its inputs, x = byte / 255. */
static gchar *
write_mean_model(guint k)
{
  g_autofree gchar *json =
      g_strdup_printf("{\"__metadata__\":{\"pingpong.layers\":\"linear(%u,1)\"},"
                      "\"0.weight\":{\"dtype\":\"F32\",\"shape\":[1,%u],\"data_offsets\":[0,%u]}}",
                      k, k, k * 4);
  const guint64 header = strlen(json);
  GByteArray *bytes = g_byte_array_new();
  g_byte_array_append(bytes, (const guint8 *) &header, 8); /* little-endian hosts only */
  g_byte_array_append(bytes, (const guint8 *) json, header);
  for (guint i = 0; i < k; i++) {
    const float w = 1.0f / k;
    g_byte_array_append(bytes, (const guint8 *) &w, sizeof w);
  }
  gchar *path = NULL;
  const gint fd = g_file_open_tmp("pp-mean-XXXXXX.safetensors", &path, NULL);
  assert_true(fd >= 0);
  close(fd);
  assert_true(g_file_set_contents(path, (const gchar *) bytes->data, bytes->len, NULL));
  g_byte_array_unref(bytes);
  return path;
}

/* An RGBx frame: dark left half and bright right half (vertical = FALSE),
 * or dark top half and bright bottom half. */
static GstBuffer *
halves_frame(gboolean vertical)
{
  GstBuffer *buffer = gst_buffer_new_allocate(NULL, W * H * 4, NULL);
  GstMapInfo map;
  gst_buffer_map(buffer, &map, GST_MAP_WRITE);
  for (int y = 0; y < H; y++)
    for (int x = 0; x < W; x++) {
      const gboolean bright = vertical ? y >= H / 2 : x >= W / 2;
      memset(map.data + (y * W + x) * 4, bright ? BRIGHT : DARK, 4);
    }
  gst_buffer_unmap(buffer, &map);
  GST_BUFFER_PTS(buffer) = 0;
  GST_BUFFER_DURATION(buffer) = GST_SECOND / 30;
  return buffer;
}

/* Runs `desc` (appsrc name=src ... appsink name=out [appsink name=out2]),
 * pushes one frame, returns what `sink` got. */
static GstSample *
run_one(const gchar *desc, GstBuffer *frame, const char *sink, GstSample **second)
{
  GError *error = NULL;
  GstElement *pipeline = gst_parse_launch(desc, &error);
  if (!pipeline)
    fail_msg("%s: %s", desc, error->message);
  GstElement *src = gst_bin_get_by_name(GST_BIN(pipeline), "src");
  assert_int_not_equal(gst_element_set_state(pipeline, GST_STATE_PLAYING),
                       GST_STATE_CHANGE_FAILURE);
  assert_int_equal(gst_app_src_push_buffer(GST_APP_SRC(src), frame), GST_FLOW_OK);
  gst_app_src_end_of_stream(GST_APP_SRC(src));
  GstElement *out = gst_bin_get_by_name(GST_BIN(pipeline), sink);
  GstSample *sample = gst_app_sink_try_pull_sample(GST_APP_SINK(out), 30 * GST_SECOND);
  if (second) {
    GstElement *out2 = gst_bin_get_by_name(GST_BIN(pipeline), "out2");
    *second = gst_app_sink_try_pull_sample(GST_APP_SINK(out2), 30 * GST_SECOND);
    gst_object_unref(out2);
  }
  gst_object_unref(out);
  gst_object_unref(src);
  gst_element_set_state(pipeline, GST_STATE_NULL);
  gst_object_unref(pipeline);
  if (!sample)
    fail_msg("no frame came out of: %s", desc);
  return sample;
}

static const guint8 *
colormap_entry(const char *nick, guint index)
{
  for (guint i = 0; i < gst_pp_n_colormaps; i++)
    if (g_str_equal(gst_pp_colormaps[i].nick, nick))
      return gst_pp_colormaps[i].rgb + 3 * index;
  fail_msg("no colormap %s", nick);
  return NULL;
}

/* Pixel (x, y) of an RGBx sample against `want` (R, G, B), within `tol`. */
static void
expect_pixel(GstSample *sample, int x, int y, const guint8 want[3], int tol, const char *what)
{
  GstMapInfo map;
  gst_buffer_map(gst_sample_get_buffer(sample), &map, GST_MAP_READ);
  const guint8 *p = map.data + (y * W + x) * 4;
  for (int c = 0; c < 3; c++)
    if (abs((int) p[c] - (int) want[c]) > tol) {
      const int got[3] = { p[0], p[1], p[2] };
      gst_buffer_unmap(gst_sample_get_buffer(sample), &map);
      fail_msg("%s: pixel (%d,%d) is %d,%d,%d; want %d,%d,%d within %d", what, x, y, got[0], got[1],
               got[2], want[0], want[1], want[2], tol);
    }
  gst_buffer_unmap(gst_sample_get_buffer(sample), &map);
}

#define CAPS "video/x-raw,format=RGBx,width=64,height=32,framerate=30/1"
#define PATCHES "mapping=patches patch-size=16"

/* The mean-brightness models for patches of PATCH and for rows of W
 * pixels, written once for all tests (group setup). */
static gchar *patch_model, *row_model;

/* The halves frame (dark left, or with `vertical` dark top) through
 * `before` (converters, or ""), cudamlp with `mapping` and the model that
 * fits it, and `after`; what reaches the appsink. */
static GstSample *
draw(const char *before, const char *mapping, const char *after, gboolean vertical)
{
  const gboolean rows = g_str_has_prefix(mapping, "mapping=rows");
  g_autofree gchar *desc = g_strdup_printf(
      "appsrc name=src caps=" CAPS " ! %s cudamlp backend=%s model=%s %s ! %s ! appsink name=out",
      before, backend_name, rows ? row_model : patch_model, mapping, after);
  return run_one(desc, halves_frame(vertical), "out", NULL);
}

static void
test_halves_take_the_colormap_ends(void **state)
{
  (void) state;
  for (guint map = 0; map < gst_pp_n_colormaps; map++) {
    const char *nick = gst_pp_colormaps[map].nick;
    /* range=frame: the lowest score of the frame is the low end. */
    g_autofree gchar *overlay =
        g_strdup_printf("scoreoverlay colormap=%s opacity=1 range=frame", nick);
    GstSample *s = draw("", PATCHES, overlay, FALSE);
    for (int y = 0; y < H; y += 7)
      for (int x = 0; x < W; x += 5)
        expect_pixel(s, x, y, colormap_entry(nick, x < W / 2 ? 0 : 255), 0, nick);
    gst_sample_unref(s);
  }
}

/* range=fixed 0..1 at opacity 0.5: each pixel is the frame and the colour
 * of its score (DARK/255 or BRIGHT/255 → colormap index) half and half. */
static void
test_fixed_range_blends(void **state)
{
  (void) state;
  GstSample *s = draw("", PATCHES, "scoreoverlay opacity=0.5 range=fixed min=0 max=1", FALSE);
  for (int half = 0; half < 2; half++) {
    const int value = half ? BRIGHT : DARK;
    const guint8 *c = colormap_entry("viridis", value); /* score value/255 → index value */
    guint8 want[3];
    for (int k = 0; k < 3; k++)
      want[k] = (guint8) ((value * 128 + c[k] * 128 + 128) >> 8);
    expect_pixel(s, half ? 50 : 10, 20, want, 1, "opacity 0.5");
  }
  gst_sample_unref(s);
}

/* I420 frames are drawn in Y, U and V; read back through videoconvert,
 * within what an 8-bit YUV round trip and 4:2:0 chroma cost (8/255),
 * away from the edge between the halves. */
static void
test_yuv_frames(void **state)
{
  (void) state;
  GstSample *s = draw("videoconvert ! video/x-raw,format=I420 !", PATCHES,
                      "scoreoverlay opacity=1 range=frame colormap=coolwarm ! videoconvert ! "
                      "video/x-raw,format=RGBx",
                      FALSE);
  expect_pixel(s, 8, 8, colormap_entry("coolwarm", 0), 8, "I420 left");
  expect_pixel(s, 56, 24, colormap_entry("coolwarm", 255), 8, "I420 right");
  gst_sample_unref(s);
}

/* smooth=true: the ends at the frame's edges, a value in between across
 * the boundary between the halves. */
static void
test_smooth(void **state)
{
  (void) state;
  GstSample *s =
      draw("", PATCHES, "scoreoverlay opacity=1 range=frame smooth=true colormap=magma", FALSE);
  expect_pixel(s, 2, 16, colormap_entry("magma", 0), 0, "smooth left edge");
  expect_pixel(s, 62, 16, colormap_entry("magma", 255), 0, "smooth right edge");
  /* x = 32 lies at grid 1.53: 0.53 of the way from the dark to the bright centre. */
  const guint mid = (guint) lround((32.5 / PATCH - 0.5 - 1) * 255);
  expect_pixel(s, 32, 16, colormap_entry("magma", mid), 0, "smooth middle");
  gst_sample_unref(s);
}

/* mapping=rows: a bar at the right edge, low end on the dark rows, high
 * end on the bright ones; the rest of the frame untouched. */
static void
test_rows_bar(void **state)
{
  (void) state;
  GstSample *s = draw("", "mapping=rows", "scoreoverlay opacity=1 range=frame bar-width=8", TRUE);
  const guint8 dark[3] = { DARK, DARK, DARK }, bright[3] = { BRIGHT, BRIGHT, BRIGHT };
  for (int y = 0; y < H; y += 3) {
    const gboolean lower = y >= H / 2;
    expect_pixel(s, W - 1, y, colormap_entry("viridis", lower ? 255 : 0), 0, "bar");
    expect_pixel(s, W - 8, y, colormap_entry("viridis", lower ? 255 : 0), 0, "bar's left column");
    expect_pixel(s, W - 9, y, lower ? bright : dark, 0, "beside the bar");
  }
  gst_sample_unref(s);
}

/* The scores a frame carries through a tee and two queues: per patch, the
 * mean brightness, as the model computes it (within float rounding). */
static void
check_meta(GstSample *s)
{
  /* As an application reads it: the structure, through ppscores.h alone. */
  const GstStructure *meta = pp_scores_meta_get(gst_sample_get_buffer(s));
  assert_non_null(meta);
  guint n = 0, outputs = 0, grid_width = 0, grid_height = 0, patch = 0;
  assert_true(gst_structure_get_uint(meta, "samples", &n));
  assert_true(gst_structure_get_uint(meta, "outputs", &outputs));
  assert_true(gst_structure_get_uint(meta, "grid-width", &grid_width));
  assert_true(gst_structure_get_uint(meta, "grid-height", &grid_height));
  assert_true(gst_structure_get_uint(meta, "patch-size", &patch));
  assert_string_equal(gst_structure_get_string(meta, "mapping"), "patches");
  assert_string_equal(gst_structure_get_string(meta, "dtype"), "float32");
  assert_int_equal(n, (W / PATCH) * (H / PATCH));
  assert_int_equal(outputs, 1);
  assert_int_equal(grid_width, W / PATCH);
  assert_int_equal(grid_height, H / PATCH);
  assert_int_equal(patch, PATCH);
  gsize size = 0;
  const float *scores = pp_scores_meta_data(meta, &size);
  assert_non_null(scores);
  assert_int_equal(size, (gsize) n * outputs * sizeof(float));
  for (guint i = 0; i < n; i++) {
    const double want = ((i % grid_width) * PATCH < W / 2 ? DARK : BRIGHT) / 255.0;
    if (fabs(scores[i] - want) > 1e-5)
      fail_msg("patch %u scored %.7f, want %.7f", i, scores[i], want);
  }
}

static void
test_meta_survives_tee_and_queue(void **state)
{
  (void) state;
  g_autofree gchar *desc = g_strdup_printf(
      "appsrc name=src caps=" CAPS " ! cudamlp backend=%s model=%s " PATCHES " output=video-meta ! "
      "tee name=t t. ! queue ! appsink name=out t. ! queue ! appsink name=out2",
      backend_name, patch_model);
  GstSample *second = NULL;
  GstSample *first = run_one(desc, halves_frame(FALSE), "out", &second);
  assert_non_null(second);
  check_meta(first);
  check_meta(second);
  /* The frame itself is what went in. */
  GstMapInfo map;
  gst_buffer_map(gst_sample_get_buffer(first), &map, GST_MAP_READ);
  assert_int_equal(map.size, W * H * 4);
  assert_int_equal(map.data[0], DARK);
  assert_int_equal(map.data[(W - 1) * 4], BRIGHT);
  gst_buffer_unmap(gst_sample_get_buffer(first), &map);
  gst_sample_unref(first);
  gst_sample_unref(second);
}

static void
test_frames_without_meta_pass_unchanged(void **state)
{
  (void) state;
  GstBuffer *frame = halves_frame(FALSE);
  GstMapInfo in;
  gst_buffer_map(frame, &in, GST_MAP_READ);
  g_autofree guint8 *before = g_memdup2(in.data, in.size);
  gst_buffer_unmap(frame, &in);
  GstSample *s =
      run_one("appsrc name=src caps=" CAPS " ! scoreoverlay opacity=1 ! appsink name=out", frame,
              "out", NULL);
  GstMapInfo out;
  gst_buffer_map(gst_sample_get_buffer(s), &out, GST_MAP_READ);
  assert_int_equal(out.size, W * H * 4);
  assert_memory_equal(out.data, before, out.size);
  gst_buffer_unmap(gst_sample_get_buffer(s), &out);
  gst_sample_unref(s);
}

static int
write_models(void **state)
{
  (void) state;
  patch_model = write_mean_model(PATCH * PATCH * 3);
  row_model = write_mean_model(W * 3);
  return 0;
}

static int
remove_models(void **state)
{
  (void) state;
  g_unlink(patch_model);
  g_unlink(row_model);
  g_clear_pointer(&patch_model, g_free);
  g_clear_pointer(&row_model, g_free);
  return 0;
}

int
main(int argc, char **argv)
{
  gst_init(&argc, &argv);
  if (!test_gst_backend(&backend_name))
    return 77;
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_halves_take_the_colormap_ends),
    cmocka_unit_test(test_fixed_range_blends),
    cmocka_unit_test(test_yuv_frames),
    cmocka_unit_test(test_smooth),
    cmocka_unit_test(test_rows_bar),
    cmocka_unit_test(test_meta_survives_tee_and_queue),
    cmocka_unit_test(test_frames_without_meta_pass_unchanged),
  };
  const int failed = cmocka_run_group_tests(tests, write_models, remove_models);
  return test_gst_finish(failed);
}
