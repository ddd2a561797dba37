// SPDX-License-Identifier: LGPL-2.1-or-later
/* YUV frames straight into cudamlp: every format × mapping × color against a
 * float64 reference of the conversion (built from GStreamer's own
 * description of the format and colorimetry) and of the MLP; the picture a
 * model sees against videoconvert's RGB of the same frame; and decodebin
 * linking to cudamlp with no converter. PP_TEST_BACKEND=cuda runs the same
 * on the GPU. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <glib/gstdio.h>
#include <gst/app/gstappsink.h>
#include <gst/check/gstharness.h>
#include <gst/gst.h>
#include <gst/video/video.h>
#include <math.h>
#include <string.h>
#include <unistd.h>

#include "backend.h"
#include "model.h"
#include "mlpharness.h"
#include "testutil.h"
#include "gstmain.h"
#include "piperun.h"

static uint64_t seed;
static const char *backend_name = "cpu";

/* ---- the reference conversion ---------------------------------------------- */

static uint8_t
sample(const GstVideoInfo *info, const uint8_t *frame, int comp, int x, int y)
{
  return frame[GST_VIDEO_INFO_COMP_OFFSET(info, comp) + y * GST_VIDEO_INFO_COMP_STRIDE(info, comp) +
               x * GST_VIDEO_INFO_COMP_PSTRIDE(info, comp)];
}

/* Where luma coordinate `p` falls among `n` chroma samples subsampled by
 * 2^sub: cosited samples sit on luma 0, 2, 4...; others at the centre of the
 * luma they cover. Returns the lower sample, the weight of the next in *w. */
static int
chroma_position(int p, int sub, gboolean cosited, int n, double *w)
{
  const double step = 1 << sub;
  double u = cosited ? p / step : (p + 0.5) / step - 0.5;
  if (u < 0)
    u = 0;
  if (u > n - 1)
    u = n - 1;
  const int i = (int) floor(u);
  *w = u - i;
  return i;
}

/* Channel c (R, G, B; 3 = luma) of pixel (x, y), in double precision, from
 * GStreamer's component layout, chroma siting, range offsets and matrix.
 * Chroma: linear between the nearest samples, as cudamlp documents. */
static double
reference_value(const GstVideoInfo *info, const uint8_t *frame, int x, int y, int c)
{
  const GstVideoFormatInfo *f = info->finfo;
  gint offset[4], scale[4];
  gst_video_color_range_offsets(info->colorimetry.range, f, offset, scale);
  double comp[3];
  comp[0] = ((double) sample(info, frame, 0, x, y) - offset[0]) / scale[0];
  const int ws = GST_VIDEO_FORMAT_INFO_W_SUB(f, 1), hs = GST_VIDEO_FORMAT_INFO_H_SUB(f, 1);
  const int cw = GST_VIDEO_FORMAT_INFO_SCALE_WIDTH(f, 1, GST_VIDEO_INFO_WIDTH(info));
  const int ch = GST_VIDEO_FORMAT_INFO_SCALE_HEIGHT(f, 1, GST_VIDEO_INFO_HEIGHT(info));
  double wx, wy;
  const int cx =
      chroma_position(x, ws, info->chroma_site & GST_VIDEO_CHROMA_SITE_H_COSITED, cw, &wx);
  const int cy =
      chroma_position(y, hs, info->chroma_site & GST_VIDEO_CHROMA_SITE_V_COSITED, ch, &wy);
  const int cx1 = MIN(cx + 1, cw - 1), cy1 = MIN(cy + 1, ch - 1);
  for (int i = 1; i < 3; i++) {
    const double top =
        sample(info, frame, i, cx, cy) * (1 - wx) + sample(info, frame, i, cx1, cy) * wx;
    const double bottom =
        sample(info, frame, i, cx, cy1) * (1 - wx) + sample(info, frame, i, cx1, cy1) * wx;
    comp[i] = (top * (1 - wy) + bottom * wy - offset[i]) / scale[i];
  }
  if (c == 3)
    return comp[0];
  gdouble kr, kb;
  assert_true(gst_video_color_matrix_get_Kr_Kb(info->colorimetry.matrix, &kr, &kb));
  const double kg = 1.0 - kr - kb;
  const double r = comp[0] + 2 * (1 - kr) * comp[2];
  const double b = comp[0] + 2 * (1 - kb) * comp[1];
  const double g = (comp[0] - kr * r - kb * b) / kg;
  const double v = c == 0 ? r : c == 1 ? g : b;
  return v < 0 ? 0 : v > 1 ? 1 : v;
}

/* X of a frame for `mapping` (patch 0: rows) and `channels` (3: RGB, 1: luma). */
static float *
reference_x(const GstVideoInfo *info, const uint8_t *frame, int patch, int channels, uint32_t *n,
            uint32_t *k)
{
  const int w = GST_VIDEO_INFO_WIDTH(info), h = GST_VIDEO_INFO_HEIGHT(info);
  *n = patch ? (uint32_t) ((w / patch) * (h / patch)) : (uint32_t) h;
  *k = patch ? (uint32_t) (patch * patch * channels) : (uint32_t) (w * channels);
  float *x = g_new(float, (size_t) *n **k);
  for (uint32_t row = 0; row < *n; row++)
    for (uint32_t col = 0; col < *k; col++) {
      const int c = col % channels, inner = col / channels;
      int px, py;
      if (!patch) {
        py = row;
        px = inner;
      } else {
        const int per_row = w / patch;
        py = (row / per_row) * patch + inner / patch;
        px = (row % per_row) * patch + inner % patch;
      }
      x[(size_t) row * *k + col] =
          (float) reference_value(info, frame, px, py, channels == 1 ? 3 : c);
    }
  return x;
}

/* ---- helpers ------------------------------------------------------------------ */

static GstHarness *
harness(const char *caps, const char *properties)
{
  /* Under compute-sanitizer every choice is timed once (tools/gpu-check.sh). */
  const char *tuning = g_getenv("PP_TEST_TUNING");
  g_autofree gchar *desc = g_strdup_printf("cudamlp backend=%s tuning=%s %s", backend_name,
                                           tuning ? tuning : "cached", properties);
  GstHarness *h = gst_harness_new_parse(desc);
  gst_harness_set_src_caps_str(h, caps);
  return h;
}

/* ---- every format, mapping and color ----------------------------------------- */

typedef struct {
  const char *format;
  int width, height;
  const char *colorimetry;
} yuv_case;

/* Sizes whose strides have padding (GStreamer rounds rows up to 4 bytes),
 * odd sizes, and each matrix and range. */
static const yuv_case cases[] = {
  { "I420", 642, 480, "bt601" },   { "NV12", 1918, 1080, "bt709" },
  { "NV21", 318, 241, "bt2020" },  { "YV12", 321, 243, "1:4:0:0" /* full-range BT.601 */ },
  { "YUY2", 322, 241, "bt709" },   { "UYVY", 319, 240, "1:3:5:1" /* full-range BT.709 */ },
  { "I420", 641, 481, "1:6:0:0" }, /* full-range BT.2020 */
};

/* `extra`: more of cudamlp's properties (a forced plan), or "". */
static void
run_case(const yuv_case *c, int patch, const char *color, const char *extra, test_rng *rng)
{
  g_autofree gchar *caps =
      g_strdup_printf("video/x-raw,format=%s,width=%d,height=%d,colorimetry=%s,framerate=30/1",
                      c->format, c->width, c->height, c->colorimetry);
  g_autofree gchar *props =
      g_strdup_printf("mapping=%s patch-size=%d color=%s hidden-size=16 outputs=3 %s",
                      patch ? "patches" : "rows", patch ? patch : 1, color, extra);
  g_autofree gchar *what = g_strdup_printf("%s %s", caps, props);
  GstVideoInfo info;
  GstCaps *parsed = gst_caps_from_string(caps);
  assert_true(gst_video_info_from_caps(&info, parsed));
  gst_caps_unref(parsed);

  GstHarness *h = harness(caps, props);
  const int channels = g_str_equal(color, "luma") ? 1 : 3;
  for (int frame = 0; frame < 2; frame++) {
    GstBuffer *in = gst_buffer_new_allocate(NULL, GST_VIDEO_INFO_SIZE(&info), NULL);
    GstMapInfo map;
    gst_buffer_map(in, &map, GST_MAP_WRITE);
    test_rng_fill_bytes(rng, map.data, map.size);
    uint32_t n, k;
    float *x = reference_x(&info, map.data, patch, channels, &n, &k);
    gst_buffer_unmap(in, &map);
    assert_int_equal(gst_harness_push(h, in), GST_FLOW_OK);
    GstBuffer *out = gst_harness_pull(h);
    pp_model *model = NULL;
    assert_int_equal(pp_model_generate(k, 16, 3, PP_HIDDEN_AUTO, &model), 0);
    test_check_scores(out, model, x, n, what);
    pp_model_free(model);
    gst_buffer_unref(out);
    g_free(x);
  }
  gst_harness_teardown(h);
}

static void
test_every_yuv_format(void **state)
{
  (void) state;
  test_rng rng;
  test_rng_seed(&rng, seed);
  for (size_t i = 0; i < G_N_ELEMENTS(cases); i++)
    for (int patch = 0; patch <= 7; patch += 7)
      for (int color = 0; color < 2; color++)
        run_case(&cases[i], patch, color ? "luma" : "rgb", "", &rng);
  /* On the GPU, the first layer in exact TF32 pieces of the converted
   * pixels (the split path, which the planner may or may not take). */
  if (g_str_equal(backend_name, "cuda"))
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++)
      run_case(&cases[i], i % 2 ? 7 : 0, i % 3 ? "rgb" : "luma", "plan=kernels=split:2+rowdot",
               &rng);
}

/* ---- what a user who drops videoconvert sees ------------------------------------ */

/* nn.Sequential(Linear(3, 3), ReLU, Linear(3, 3)) + the final ReLU with
 * identity weights: on 1×1 patches it gives back each pixel's R, G, B. */
static gchar *
write_identity_model(void)
{
  static const char json[] =
      "{\"0.weight\":{\"dtype\":\"F32\",\"shape\":[3,3],\"data_offsets\":[0,36]},"
      "\"2.weight\":{\"dtype\":\"F32\",\"shape\":[3,3],\"data_offsets\":[36,72]}}";
  const guint64 header = sizeof json - 1;
  GByteArray *bytes = g_byte_array_new();
  g_byte_array_append(bytes, (const guint8 *) &header, 8); /* little-endian hosts only */
  g_byte_array_append(bytes, (const guint8 *) json, header);
  for (int m = 0; m < 2; m++)
    for (int i = 0; i < 9; i++) {
      const float v = i % 4 == 0 ? 1.0f : 0.0f;
      g_byte_array_append(bytes, (const guint8 *) &v, sizeof v);
    }
  gchar *path = NULL;
  const gint fd = g_file_open_tmp("pp-identity-XXXXXX.safetensors", &path, NULL);
  assert_true(fd >= 0);
  close(fd);
  assert_true(g_file_set_contents(path, (const gchar *) bytes->data, bytes->len, NULL));
  g_byte_array_unref(bytes);
  return path;
}

static GstSample *
pull_one(GstElement *pipeline, const char *name)
{
  GstElement *sink = gst_bin_get_by_name(GST_BIN(pipeline), name);
  GstSample *sample = gst_app_sink_pull_sample(GST_APP_SINK(sink));
  gst_object_unref(sink);
  assert_non_null(sample);
  return sample;
}

/* Mean |ours − videoconvert| per channel allowed, in 1/255: 3, except where
 * videoconvert takes its I420/YV12 → RGB fast path, which replicates chroma
 * (its general path, which NV12 and the others take, interpolates like
 * cudamlp) and whose 8-bit matrix makes white 253: there the measured
 * difference on smpte's blue is 3.4 (docs/PERFORMANCE.md), allowed 4. */
static double
videoconvert_tolerance(const char *format)
{
  return g_str_equal(format, "I420") || g_str_equal(format, "YV12") ? 4.0 : 3.0;
}

static void
compare_with_videoconvert(const char *model, const char *format, const char *pattern)
{
  enum { W = 320, H = 240 };
  g_autofree gchar *desc = g_strdup_printf(
      "videotestsrc num-buffers=1 pattern=%s ! video/x-raw,format=%s,width=%d,height=%d ! tee "
      "name=t t. ! queue ! videoconvert ! video/x-raw,format=RGB ! appsink name=rgb "
      "t. ! queue ! cudamlp backend=%s model=%s mapping=patches patch-size=1 ! appsink name=mlp",
      pattern, format, W, H, backend_name, model);
  GstElement *pipeline = gst_parse_launch(desc, NULL);
  assert_non_null(pipeline);
  assert_int_not_equal(gst_element_set_state(pipeline, GST_STATE_PLAYING),
                       GST_STATE_CHANGE_FAILURE);
  GstSample *rgb = pull_one(pipeline, "rgb"), *mlp = pull_one(pipeline, "mlp");
  GstVideoInfo info;
  assert_true(gst_video_info_from_caps(&info, gst_sample_get_caps(rgb)));
  GstMapInfo a, b;
  gst_buffer_map(gst_sample_get_buffer(rgb), &a, GST_MAP_READ);
  gst_buffer_map(gst_sample_get_buffer(mlp), &b, GST_MAP_READ);
  assert_int_equal(b.size, (gsize) W * H * 3 * sizeof(float));
  const float *ours = (const float *) b.data;
  double diff[3] = { 0 };
  for (int y = 0; y < H; y++)
    for (int x = 0; x < W; x++)
      for (int c = 0; c < 3; c++)
        diff[c] += fabs(ours[(y * W + x) * 3 + c] * 255.0 -
                        a.data[y * GST_VIDEO_INFO_PLANE_STRIDE(&info, 0) + x * 3 + c]);
  gst_buffer_unmap(gst_sample_get_buffer(rgb), &a);
  gst_buffer_unmap(gst_sample_get_buffer(mlp), &b);
  gst_sample_unref(rgb);
  gst_sample_unref(mlp);
  gst_element_set_state(pipeline, GST_STATE_NULL);
  gst_object_unref(pipeline);
  for (int c = 0; c < 3; c++) {
    const double mean = diff[c] / (W * H);
    g_printerr("  %s %-8s channel %d: mean |ours - videoconvert| = %.3f / 255\n", format, pattern,
               c, mean);
    if (!(mean <= videoconvert_tolerance(format)))
      fail_msg("%s %s channel %d differs from videoconvert by %.3f/255 on average (> %.0f)", format,
               pattern, c, mean, videoconvert_tolerance(format));
  }
}

/* The conversion itself, pixel by pixel: every YUV format in BT.601 and
 * BT.709, limited and full range, through the identity model on 1×1
 * patches (each sample a pixel's R, G, B), within 1/255 of the float64
 * reference of what docs/elements.md states. Odd sizes: the last chroma
 * column and row are clamped edges. */
static void
test_conversion_within_one_level(void **state)
{
  (void) state;
  enum { W = 66, H = 51 };
  g_autofree gchar *model = write_identity_model();
  static const char *const formats[] = { "NV12", "NV21", "I420", "YV12", "YUY2", "UYVY" };
  static const char *const colorimetries[] = { "bt601", "1:4:0:0", "bt709", "1:3:5:1" };
  test_rng rng;
  test_rng_seed(&rng, seed + 1);
  for (size_t f = 0; f < G_N_ELEMENTS(formats); f++)
    for (size_t c = 0; c < G_N_ELEMENTS(colorimetries); c++) {
      g_autofree gchar *caps =
          g_strdup_printf("video/x-raw,format=%s,width=%d,height=%d,colorimetry=%s,framerate=30/1",
                          formats[f], W, H, colorimetries[c]);
      g_autofree gchar *props =
          g_strdup_printf("model=%s mapping=patches patch-size=1 color=rgb", model);
      GstVideoInfo info;
      GstCaps *parsed = gst_caps_from_string(caps);
      assert_true(gst_video_info_from_caps(&info, parsed));
      gst_caps_unref(parsed);
      GstHarness *h = harness(caps, props);
      GstBuffer *in = gst_buffer_new_allocate(NULL, GST_VIDEO_INFO_SIZE(&info), NULL);
      GstMapInfo map;
      gst_buffer_map(in, &map, GST_MAP_WRITE);
      test_rng_fill_bytes(&rng, map.data, map.size);
      uint32_t n, k;
      float *want = reference_x(&info, map.data, 1, 3, &n, &k);
      gst_buffer_unmap(in, &map);
      assert_int_equal(gst_harness_push(h, in), GST_FLOW_OK);
      GstBuffer *out = gst_harness_pull(h);
      GstMapInfo got;
      gst_buffer_map(out, &got, GST_MAP_READ);
      assert_int_equal(got.size, (gsize) n * k * sizeof(float));
      double worst = 0;
      for (size_t i = 0; i < (size_t) n * k; i++)
        worst = fmax(worst, fabs(((const float *) got.data)[i] - want[i]));
      gst_buffer_unmap(out, &got);
      gst_buffer_unref(out);
      g_free(want);
      gst_harness_teardown(h);
      g_printerr("  %-4s %-8s largest |ours - reference| = %.2e (x255: %.4f)\n", formats[f],
                 colorimetries[c], worst, worst * 255);
      if (!(worst <= 1.0 / 255))
        fail_msg("%s %s: a pixel differs from the reference by %.3f/255", formats[f],
                 colorimetries[c], worst * 255);
    }
  g_unlink(model);
}

static void
test_same_picture_as_videoconvert(void **state)
{
  (void) state;
  g_autofree gchar *model = write_identity_model();
  static const char *const formats[] = { "NV12", "NV21", "I420", "YV12", "YUY2", "UYVY" };
  static const char *const patterns[] = { "smpte", "ball", "gradient" };
  for (size_t f = 0; f < G_N_ELEMENTS(formats); f++)
    for (size_t p = 0; p < G_N_ELEMENTS(patterns); p++)
      compare_with_videoconvert(model, formats[f], patterns[p]);
  g_unlink(model);
}

/* ---- negotiation -------------------------------------------------------------- */

/* decodebin's frames go into cudamlp as they are, no converter between:
 * I420 from vp8dec, NV12 where decodebin picks NVIDIA's decoder. */
static void
test_decodebin_links_without_converter(void **state)
{
  (void) state;
  g_autofree gchar *dir = g_dir_make_tmp("pp-clip-XXXXXX", NULL);
  g_autofree gchar *clip = g_build_filename(dir, "clip.webm", NULL);
  g_autofree gchar *encode = g_strdup_printf(
      "videotestsrc num-buffers=12 ! video/x-raw,format=I420,width=176,height=144,framerate=30/1 "
      "! vp8enc ! webmmux ! filesink location=%s",
      clip);
  GstElement *enc = gst_parse_launch(encode, NULL);
  if (!enc) {
    g_printerr("no vp8enc/webmmux here; skipping\n");
    skip();
  }
  gst_element_set_state(enc, GST_STATE_PLAYING);
  GstBus *enc_bus = gst_element_get_bus(enc);
  GstMessage *msg =
      gst_bus_timed_pop_filtered(enc_bus, 30 * GST_SECOND, GST_MESSAGE_EOS | GST_MESSAGE_ERROR);
  gst_object_unref(enc_bus);
  const gboolean made = msg && GST_MESSAGE_TYPE(msg) == GST_MESSAGE_EOS;
  if (msg)
    gst_message_unref(msg);
  gst_element_set_state(enc, GST_STATE_NULL);
  gst_object_unref(enc);
  /* An encoder that is there but cannot run (a host without libvpx's
   * library) says nothing about cudamlp. */
  if (!made) {
    g_printerr("the VP8 clip could not be made here; skipping\n");
    skip();
  }

  g_autofree gchar *decode = g_strdup_printf(
      "filesrc location=%s ! decodebin ! cudamlp name=mlp backend=%s mapping=patches "
      "patch-size=16 hidden-size=8 ! fakesink",
      clip, backend_name);
  GstElement *pipeline = gst_parse_launch(decode, NULL);
  assert_non_null(pipeline);
  gst_element_set_state(pipeline, GST_STATE_PLAYING);
  GstBus *bus = gst_element_get_bus(pipeline);
  msg = gst_bus_timed_pop_filtered(bus, 30 * GST_SECOND, GST_MESSAGE_EOS | GST_MESSAGE_ERROR);
  assert_non_null(msg);
  assert_int_equal(GST_MESSAGE_TYPE(msg), GST_MESSAGE_EOS);
  gst_message_unref(msg);
  GstElement *mlp = gst_bin_get_by_name(GST_BIN(pipeline), "mlp");
  GstPad *pad = gst_element_get_static_pad(mlp, "sink");
  GstCaps *caps = gst_pad_get_current_caps(pad);
  GstPad *peer = gst_pad_get_peer(pad);
  GstElement *upstream = gst_pad_get_parent_element(peer);
  GstElementFactory *factory = gst_element_get_factory(upstream);
  g_printerr("  decodebin → cudamlp: %s from %s\n",
             gst_structure_get_string(gst_caps_get_structure(caps, 0), "format"),
             GST_OBJECT_NAME(upstream));
  const gchar *format = gst_structure_get_string(gst_caps_get_structure(caps, 0), "format");
  assert_true(g_str_equal(format, "I420") || g_str_equal(format, "NV12"));
  /* The pad cudamlp links to is decodebin's own (a ghost pad), so nothing
   * that converts was put between them. */
  assert_true(GST_IS_BIN(upstream) || !g_str_has_prefix(GST_OBJECT_NAME(factory), "videoconvert"));
  assert_int_equal(test_stat_u64(mlp, "frames"), 12);
  gst_object_unref(upstream);
  gst_object_unref(peer);
  gst_caps_unref(caps);
  gst_object_unref(pad);
  gst_object_unref(mlp);
  gst_object_unref(bus);
  gst_element_set_state(pipeline, GST_STATE_NULL);
  gst_object_unref(pipeline);
  g_unlink(clip);
  g_rmdir(dir);
}

/* color=luma leaves RGB formats to a converter upstream. */
static void
test_luma_refuses_rgb(void **state)
{
  (void) state;
  GstElement *mlp = gst_element_factory_make("cudamlp", NULL);
  gst_util_set_object_arg(G_OBJECT(mlp), "color", "luma");
  GstPad *pad = gst_element_get_static_pad(mlp, "sink");
  GstCaps *rgb = gst_caps_from_string("video/x-raw,format=RGB,width=8,height=8");
  GstCaps *nv12 = gst_caps_from_string("video/x-raw,format=NV12,width=8,height=8");
  GstCaps *can = gst_pad_query_caps(pad, NULL);
  assert_false(gst_caps_can_intersect(can, rgb));
  assert_true(gst_caps_can_intersect(can, nv12));
  gst_caps_unref(can);
  gst_caps_unref(rgb);
  gst_caps_unref(nv12);
  gst_object_unref(pad);
  gst_object_unref(mlp);
}

int
main(int argc, char **argv)
{
  gst_init(&argc, &argv);
  seed = test_seed();
  if (!test_gst_backend(&backend_name))
    return 77;
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_every_yuv_format),
    cmocka_unit_test(test_conversion_within_one_level),
    cmocka_unit_test(test_same_picture_as_videoconvert),
    cmocka_unit_test(test_decodebin_links_without_converter),
    cmocka_unit_test(test_luma_refuses_rgb),
  };
  return test_gst_run(tests, NULL);
}
