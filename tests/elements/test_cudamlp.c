// SPDX-License-Identifier: LGPL-2.1-or-later
/* cudamlp through GstHarness and real pipelines: results against an
 * independent reference for every format and mapping, timestamps, ordering of
 * events, EOS, flush and caps changes. Negotiation is test_negotiation.c's;
 * settings, queries and state changes test_element.c's. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <gst/check/gstharness.h>
#include <gst/gst.h>
#include <gst/video/video.h>
#include <glib/gstdio.h>
#include <string.h>
#include <unistd.h>

#include "backend.h"
#include "model.h"
#include "mlpharness.h"
#include "piperun.h"
#include "testutil.h"
#include "gstmain.h"

static uint64_t seed;
/* The backend under test: "cpu" by default, "cuda" in the GPU suite. */
static const char *backend_name = "cpu";
#define make_mlp(...) test_make_mlp(backend_name, __VA_ARGS__)

typedef struct {
  GstVideoFormat format;
  int where[4]; /* memory position of R, G, B, A; -1 when absent */
  int channels; /* inputs per pixel */
} format_desc;

static const format_desc formats[] = {
  { GST_VIDEO_FORMAT_GRAY8, { 0, -1, -1, -1 }, 1 }, { GST_VIDEO_FORMAT_RGB, { 0, 1, 2, -1 }, 3 },
  { GST_VIDEO_FORMAT_BGR, { 2, 1, 0, -1 }, 3 },     { GST_VIDEO_FORMAT_RGBA, { 0, 1, 2, 3 }, 4 },
  { GST_VIDEO_FORMAT_BGRA, { 2, 1, 0, 3 }, 4 },     { GST_VIDEO_FORMAT_RGBx, { 0, 1, 2, -1 }, 3 },
  { GST_VIDEO_FORMAT_BGRx, { 2, 1, 0, -1 }, 3 },
};

/* A random image, RGBA per pixel, and its frame in `f`'s memory layout with
 * noise in every byte that is not an input (padding, x channels). */
typedef struct {
  int w, h;
  uint8_t *rgba;
} image;

static image
random_image(test_rng *rng, int w, int h)
{
  image im = { w, h, g_malloc((size_t) w * h * 4) };
  test_rng_fill_bytes(rng, im.rgba, (size_t) w * h * 4);
  return im;
}

static GstBuffer *
encode_frame(const image *im, const format_desc *f, test_rng *rng)
{
  GstVideoInfo info;
  gst_video_info_set_format(&info, f->format, im->w, im->h);
  const int stride = GST_VIDEO_INFO_PLANE_STRIDE(&info, 0);
  const int bpp = GST_VIDEO_INFO_COMP_PSTRIDE(&info, 0);
  GstBuffer *buf = gst_buffer_new_allocate(NULL, GST_VIDEO_INFO_SIZE(&info), NULL);
  GstMapInfo map;
  gst_buffer_map(buf, &map, GST_MAP_WRITE);
  test_rng_fill_bytes(rng, map.data, map.size);
  for (int y = 0; y < im->h; y++)
    for (int x = 0; x < im->w; x++)
      for (int c = 0; c < 4; c++)
        if (f->where[c] >= 0)
          map.data[y * stride + x * bpp + f->where[c]] = im->rgba[(y * im->w + x) * 4 + c];
  gst_buffer_unmap(buf, &map);
  return buf;
}

/* X for `im` as the design defines it, from the image, not the frame bytes. */
static float *
image_to_x(const image *im, int channels, int patch, uint32_t *n, uint32_t *k)
{
  if (!patch) {
    *n = im->h;
    *k = im->w * channels;
  } else {
    *n = (im->w / patch) * (im->h / patch);
    *k = patch * patch * channels;
  }
  float *x = g_new(float, (size_t) *n **k);
  for (uint32_t row = 0; row < *n; row++)
    for (uint32_t col = 0; col < *k; col++) {
      int px, py, c = col % channels;
      if (!patch) {
        py = row;
        px = col / channels;
      } else {
        const int per_row = im->w / patch, inner = col / channels;
        py = (row / per_row) * patch + inner / patch;
        px = (row % per_row) * patch + inner % patch;
      }
      x[(size_t) row * *k + col] = im->rgba[(py * im->w + px) * 4 + c] / 255.0f;
    }
  return x;
}

#define check_output(out, model, x, n) test_check_scores(out, model, x, n, G_STRLOC)

static pp_model *
generated(uint32_t k, uint32_t d, uint32_t o, pp_hidden_activation act)
{
  pp_model *m = NULL;
  assert_int_equal(pp_model_generate(k, d, o, act, &m), 0);
  return m;
}

/* ---- results -------------------------------------------------------------- */

static void
test_rows_timestamps_and_caps(void **state)
{
  (void) state;
  test_rng rng;
  test_rng_seed(&rng, seed);
  GstBus *bus;
  GstHarness *h =
      test_harness_for(make_mlp("slots", 3, "hidden-size", 24, "outputs", 2, NULL), &bus);
  gst_harness_set_src_caps_str(h, "video/x-raw,format=GRAY8,width=40,height=30,framerate=30/1");
  enum { FRAMES = 20 };
  float *xs[FRAMES];
  uint32_t n, k;
  for (int i = 0; i < FRAMES; i++) {
    image im = random_image(&rng, 40, 30);
    xs[i] = image_to_x(&im, 1, 0, &n, &k);
    GstBuffer *buf = encode_frame(&im, &formats[0], &rng);
    GST_BUFFER_PTS(buf) = i * 33 * GST_MSECOND;
    GST_BUFFER_DTS(buf) = i * 33 * GST_MSECOND + 1;
    GST_BUFFER_DURATION(buf) = 33 * GST_MSECOND;
    GST_BUFFER_OFFSET(buf) = i;
    GST_BUFFER_OFFSET_END(buf) = i + 1;
    GST_BUFFER_FLAG_SET(buf, i == 0 ? GST_BUFFER_FLAG_DISCONT : GST_BUFFER_FLAG_DELTA_UNIT);
    assert_int_equal(gst_harness_push(h, buf), GST_FLOW_OK);
    g_free(im.rgba);
  }
  pp_model *model = generated(k, 24, 2, PP_HIDDEN_AUTO);
  for (int i = 0; i < FRAMES; i++) {
    GstBuffer *out = gst_harness_pull(h);
    assert_int_equal(GST_BUFFER_PTS(out), i * 33 * GST_MSECOND);
    assert_int_equal(GST_BUFFER_DTS(out), i * 33 * GST_MSECOND + 1);
    assert_int_equal(GST_BUFFER_DURATION(out), 33 * GST_MSECOND);
    assert_int_equal(GST_BUFFER_OFFSET(out), i);
    assert_int_equal(GST_BUFFER_OFFSET_END(out), i + 1);
    assert_int_equal(GST_BUFFER_FLAG_IS_SET(out, GST_BUFFER_FLAG_DISCONT), i == 0);
    assert_int_equal(GST_BUFFER_FLAG_IS_SET(out, GST_BUFFER_FLAG_DELTA_UNIT), i != 0);
    check_output(out, model, xs[i], n);
    gst_buffer_unref(out);
    g_free(xs[i]);
  }
  GstCaps *caps = gst_pad_get_current_caps(h->sinkpad);
  GstCaps *want = gst_caps_from_string("other/tensors,format=static,num_tensors=1,"
                                       "types=float32,dimensions=(string)2:30:1:1,framerate=30/1");
  assert_true(gst_caps_is_equal(caps, want));
  gst_caps_unref(caps), gst_caps_unref(want);

  GstStructure *stats;
  g_object_get(h->element, "stats", &stats, NULL);
  guint64 frames;
  double p50;
  assert_true(gst_structure_get_uint64(stats, "frames", &frames));
  assert_int_equal(frames, FRAMES);
  assert_true(gst_structure_get_double(stats, "latency-p50-us", &p50) && p50 > 0);
  assert_string_equal(gst_structure_get_string(stats, "backend"), backend_name);
  gst_structure_free(stats);
  pp_model_free(model);
  test_harness_finish(h, bus);
}

static void
run_format(const format_desc *f, int patch, int w, int h_px, pp_hidden_activation act,
           guint outputs)
{
  test_rng rng;
  test_rng_seed(&rng, seed + f->format * 7 + patch);
  GstElement *e = make_mlp("slots", 2, "hidden-size", 19, "outputs", outputs, NULL);
  gst_util_set_object_arg(G_OBJECT(e), "mapping", patch ? "patches" : "rows");
  gst_util_set_object_arg(G_OBJECT(e), "hidden-activation",
                          act == PP_HIDDEN_RELU ? "relu" : "none");
  if (patch)
    g_object_set(e, "patch-size", patch, NULL);
  GstBus *bus;
  GstHarness *h = test_harness_for(e, &bus);
  g_autofree gchar *caps = g_strdup_printf("video/x-raw,format=%s,width=%d,height=%d,framerate=0/1",
                                           gst_video_format_to_string(f->format), w, h_px);
  gst_harness_set_src_caps_str(h, caps);
  uint32_t n, k;
  pp_model *model = NULL;
  for (int i = 0; i < 3; i++) {
    image im = random_image(&rng, w, h_px);
    float *x = image_to_x(&im, f->channels, patch, &n, &k);
    if (!model)
      model = generated(k, 19, outputs, act);
    assert_int_equal(gst_harness_push(h, encode_frame(&im, f, &rng)), GST_FLOW_OK);
    GstBuffer *out = gst_harness_pull(h);
    test_check_scores(out, model, x, n, caps);
    gst_buffer_unref(out);
    g_free(x);
    g_free(im.rgba);
  }
  pp_model_free(model);
  test_harness_finish(h, bus);
}

static void
test_every_format_and_mapping(void **state)
{
  (void) state;
  for (size_t i = 0; i < G_N_ELEMENTS(formats); i++) {
    run_format(&formats[i], 0, 23, 17, PP_HIDDEN_NONE, 1);
    /* 23×17 with 5×5 patches: the 3-pixel right and 2-pixel bottom edges
     * hold no whole patch and are left out. */
    run_format(&formats[i], 5, 23, 17, PP_HIDDEN_RELU, 3);
  }
}

static void
test_rgb_and_bgr_agree(void **state)
{
  (void) state;
  test_rng rng;
  test_rng_seed(&rng, seed + 99);
  image im = random_image(&rng, 16, 8);
  GstBuffer *results[2];
  for (int i = 0; i < 2; i++) {
    GstBus *bus;
    GstHarness *h = test_harness_for(make_mlp("hidden-size", 8, NULL), &bus);
    gst_harness_set_src_caps_str(h, i ? "video/x-raw,format=BGR,width=16,height=8,framerate=0/1"
                                      : "video/x-raw,format=RGB,width=16,height=8,framerate=0/1");
    assert_int_equal(gst_harness_push(h, encode_frame(&im, &formats[1 + i], &rng)), GST_FLOW_OK);
    results[i] = gst_harness_pull(h);
    test_harness_finish(h, bus);
  }
  GstMapInfo a, b;
  gst_buffer_map(results[0], &a, GST_MAP_READ);
  gst_buffer_map(results[1], &b, GST_MAP_READ);
  assert_int_equal(a.size, b.size);
  /* The same X gives the same result; on CUDA each run picks its kernels by
   * timing them, so the last bits may differ: compare within FP32 rounding. */
  const size_t n = a.size / sizeof(float);
  double *ref = g_new(double, n);
  for (size_t i = 0; i < n; i++)
    ref[i] = ((const float *) b.data)[i];
  const double err = test_relative_error((const float *) a.data, ref, n);
  g_free(ref);
  if (!(err <= PP_FP32_REL_TOL))
    fail_msg("RGB and BGR differ: relative error %.3e", err);
  gst_buffer_unmap(results[0], &a);
  gst_buffer_unmap(results[1], &b);
  gst_buffer_unref(results[0]);
  gst_buffer_unref(results[1]);
  g_free(im.rgba);
}

/* One random 24×16 RGB frame in 4×4 patches through cudamlp at
 * `precision`; its 24 × 3 results. */
static float *
scores_at(const char *precision, const image *im, test_rng *rng)
{
  GstElement *e = make_mlp("hidden-size", 40, "outputs", 3, "patch-size", 4, NULL);
  gst_util_set_object_arg(G_OBJECT(e), "mapping", "patches");
  gst_util_set_object_arg(G_OBJECT(e), "precision", precision);
  GstBus *bus;
  GstHarness *h = test_harness_for(e, &bus);
  gst_harness_set_src_caps_str(h, "video/x-raw,format=RGB,width=24,height=16,framerate=0/1");
  assert_int_equal(gst_harness_push(h, encode_frame(im, &formats[1], rng)), GST_FLOW_OK);
  GstBuffer *out = gst_harness_pull(h);
  float *scores = g_new(float, 24 * 3);
  assert_int_equal(gst_buffer_extract(out, 0, scores, 24 * 3 * sizeof(float)),
                   24 * 3 * sizeof(float));
  gst_buffer_unref(out);
  test_harness_finish(h, bus);
  return scores;
}

/* precision=bf16 and fp16 give float32 scores within each precision's
 * bound of float64, visibly rounded (further from it than fp32). */
static void
test_precision_property(void **state)
{
  (void) state;
  test_rng rng;
  test_rng_seed(&rng, seed + 17);
  image im = random_image(&rng, 24, 16);
  uint32_t n, k;
  float *x = image_to_x(&im, 3, 4, &n, &k);
  pp_model *model = generated(k, 40, 3, PP_HIDDEN_NONE);
  double *ref = g_new(double, (size_t) n * 3), *mag = g_new(double, (size_t) n * 3);
  test_reference_mlp(model, x, n, ref, mag);
  static const char *const names[] = { "fp32", "bf16", "fp16" };
  static const pp_precision precisions[] = { PP_PRECISION_FP32, PP_PRECISION_BF16,
                                             PP_PRECISION_FP16 };
  double err[3];
  for (int i = 0; i < 3; i++) {
    test_rng frame_rng = rng; /* the same padding bytes every time */
    float *scores = scores_at(names[i], &im, &frame_rng);
    err[i] = test_scaled_error(scores, ref, mag, (size_t) n * 3);
    if (!(err[i] <= test_precision_tol(precisions[i])))
      fail_msg("precision=%s: scaled error %.3e > %.0e", names[i], err[i],
               test_precision_tol(precisions[i]));
    g_free(scores);
  }
  print_message("scaled error fp32 %.2e, bf16 %.2e, fp16 %.2e\n", err[0], err[1], err[2]);
  if (!(err[1] > 10 * err[0] && err[2] > 10 * err[0] && err[1] > err[2]))
    fail_msg("bf16 %.3e and fp16 %.3e against fp32 %.3e: not rounded", err[1], err[2], err[0]);
  g_free(ref), g_free(mag), g_free(x), g_free(im.rgba);
  pp_model_free(model);
}

/* One random 7×45 other/tensors frame through the harness, checked against
 * `model` on the CPU. */
static void
push_tensor_and_check(GstHarness *h, const pp_model *model, test_rng *rng)
{
  float x[7 * 45];
  test_rng_fill_floats(rng, x, G_N_ELEMENTS(x), -2, 2);
  assert_int_equal(gst_harness_push(h, gst_buffer_new_memdup(x, sizeof x)), GST_FLOW_OK);
  GstBuffer *out = gst_harness_pull(h);
  check_output(out, model, x, 7);
  gst_buffer_unref(out);
}

static void
test_tensor_input(void **state)
{
  (void) state;
  test_rng rng;
  test_rng_seed(&rng, seed + 5);
  GstBus *bus;
  GstHarness *h = test_harness_for(make_mlp("hidden-size", 33, "outputs", 4, NULL), &bus);
  gst_harness_set_src_caps_str(h, "other/tensors,format=static,num_tensors=1,types=float32,"
                                  "dimensions=(string)45:7:1:1,framerate=10/1");
  pp_model *model = generated(45, 33, 4, PP_HIDDEN_AUTO);
  for (int i = 0; i < 4; i++)
    push_tensor_and_check(h, model, &rng);
  pp_model_free(model);
  test_harness_finish(h, bus);
}

/* NNStreamer's C:W:H:N: the innermost dimensions that multiply to the
 * model's K make one sample, and the element says so. */
static void
test_tensor_input_cwhn(void **state)
{
  (void) state;
  test_rng rng;
  test_rng_seed(&rng, seed + 5);
  GstBus *bus;
  GstHarness *h =
      test_harness_for(make_mlp("layers", "linear(45,33), linear(33,4), relu", NULL), &bus);
  gst_harness_set_src_caps_str(h, "other/tensors,format=static,num_tensors=1,types=float32,"
                                  "dimensions=(string)3:5:3:7,framerate=10/1");
  pp_model *model = generated(45, 33, 4, PP_HIDDEN_AUTO);
  for (int i = 0; i < 4; i++)
    push_tensor_and_check(h, model, &rng);
  pp_model_free(model);
  GstMessage *info = gst_bus_pop_filtered(bus, GST_MESSAGE_INFO);
  assert_non_null(info);
  GError *err = NULL;
  gst_message_parse_info(info, &err, NULL);
  if (!strstr(err->message, "3:5:3:7 as 7 samples of K=45"))
    fail_msg("the element said \"%s\"", err->message);
  g_error_free(err);
  gst_message_unref(info);
  test_harness_finish(h, bus);
}

static void
test_caps_change_midstream(void **state)
{
  (void) state;
  test_rng rng;
  test_rng_seed(&rng, seed + 6);
  GstBus *bus;
  GstHarness *h = test_harness_for(make_mlp("slots", 3, "hidden-size", 10, NULL), &bus);
  const int widths[2] = { 12, 20 };
  for (int round = 0; round < 2; round++) {
    g_autofree gchar *caps =
        g_strdup_printf("video/x-raw,format=GRAY8,width=%d,height=6,framerate=0/1", widths[round]);
    gst_harness_set_src_caps_str(h, caps);
    float *xs[4];
    uint32_t n, k;
    for (int i = 0; i < 4; i++) {
      image im = random_image(&rng, widths[round], 6);
      xs[i] = image_to_x(&im, 1, 0, &n, &k);
      assert_int_equal(gst_harness_push(h, encode_frame(&im, &formats[0], &rng)), GST_FLOW_OK);
      g_free(im.rgba);
    }
    pp_model *model = generated(k, 10, 1, PP_HIDDEN_AUTO);
    for (int i = 0; i < 4; i++) {
      GstBuffer *out = gst_harness_pull(h);
      check_output(out, model, xs[i], n);
      gst_buffer_unref(out);
      g_free(xs[i]);
    }
    pp_model_free(model);
  }
  test_harness_finish(h, bus);
}

/* ---- ordering of events, EOS, flush ---------------------------------------- */

typedef struct {
  GMutex lock;
  GString *seen;
  /* When set, buffers wait here until released: downstream stalls. */
  gboolean block;
  GCond unblock;
} recorder;

static GstPadProbeReturn
record_probe(GstPad *pad, GstPadProbeInfo *info, gpointer data)
{
  recorder *r = data;
  (void) pad;
  g_mutex_lock(&r->lock);
  if (GST_PAD_PROBE_INFO_TYPE(info) & GST_PAD_PROBE_TYPE_BUFFER) {
    GstBuffer *buf = GST_PAD_PROBE_INFO_BUFFER(info);
    g_string_append_printf(r->seen, "b%" G_GUINT64_FORMAT " ", GST_BUFFER_OFFSET(buf));
    while (r->block)
      g_cond_wait(&r->unblock, &r->lock);
  } else {
    GstEvent *ev = GST_PAD_PROBE_INFO_EVENT(info);
    /* Like a real sink, a flush releases whatever waits downstream. */
    if (GST_EVENT_TYPE(ev) == GST_EVENT_FLUSH_START) {
      r->block = FALSE;
      g_cond_broadcast(&r->unblock);
    }
    if (GST_EVENT_TYPE(ev) == GST_EVENT_CUSTOM_DOWNSTREAM)
      g_string_append_printf(r->seen, "%s ", gst_structure_get_name(gst_event_get_structure(ev)));
    else
      g_string_append_printf(r->seen, "%s ", GST_EVENT_TYPE_NAME(ev));
  }
  g_mutex_unlock(&r->lock);
  return GST_PAD_PROBE_OK;
}

static GstBuffer *
numbered_frame(int offset, gsize size)
{
  GstBuffer *buf = gst_buffer_new_allocate(NULL, size, NULL);
  gst_buffer_memset(buf, 0, (guint8) (offset * 41 + 7), size);
  GST_BUFFER_OFFSET(buf) = offset;
  GST_BUFFER_PTS(buf) = offset * GST_MSECOND;
  return buf;
}

static void
wait_for_text(recorder *r, const char *text)
{
  for (int i = 0; i < 2000; i++) {
    g_mutex_lock(&r->lock);
    const gboolean found = strstr(r->seen->str, text) != NULL;
    g_mutex_unlock(&r->lock);
    if (found)
      return;
    g_usleep(5000);
  }
  fail_msg("never saw \"%s\"; saw \"%s\"", text, r->seen->str);
}

static void
test_events_stay_in_order(void **state)
{
  (void) state;
  recorder r = { .seen = g_string_new(NULL) };
  g_mutex_init(&r.lock);
  g_cond_init(&r.unblock);
  GstBus *bus;
  GstHarness *h = test_harness_for(make_mlp("slots", 4, "hidden-size", 64, NULL), &bus);
  gst_pad_add_probe(h->sinkpad, GST_PAD_PROBE_TYPE_DATA_DOWNSTREAM, record_probe, &r, NULL);
  gst_harness_set_src_caps_str(h, "video/x-raw,format=GRAY8,width=128,height=128,framerate=0/1");
  const gsize size = 128 * 128;
  assert_int_equal(gst_harness_push(h, numbered_frame(0, size)), GST_FLOW_OK);
  assert_true(gst_harness_push_event(
      h, gst_event_new_custom(GST_EVENT_CUSTOM_DOWNSTREAM, gst_structure_new_empty("mark-a"))));
  for (int i = 1; i < 6; i++)
    assert_int_equal(gst_harness_push(h, numbered_frame(i, size)), GST_FLOW_OK);
  assert_true(gst_harness_push_event(h, gst_event_new_tag(gst_tag_list_new_empty())));
  assert_true(gst_harness_push_event(h, gst_event_new_gap(0, GST_SECOND)));
  assert_int_equal(gst_harness_push(h, numbered_frame(6, size)), GST_FLOW_OK);
  assert_true(gst_harness_push_event(h, gst_event_new_eos()));
  wait_for_text(&r, "eos");
  /* Our caps replace the upstream ones, between stream-start and segment. */
  assert_string_equal(r.seen->str, "stream-start caps segment b0 mark-a b1 b2 b3 b4 b5 tag gap "
                                   "b6 eos ");
  test_harness_finish(h, bus);
  g_string_free(r.seen, TRUE);
  g_mutex_clear(&r.lock);
  g_cond_clear(&r.unblock);
}

typedef struct {
  GstHarness *h;
  int first, count;
  GstFlowReturn last;
  volatile gint returned;
} pusher_args;

static gpointer
pusher(gpointer data)
{
  pusher_args *a = data;
  for (int i = 0; i < a->count; i++) {
    a->last = gst_harness_push(a->h, numbered_frame(a->first + i, 64 * 64));
    if (a->last != GST_FLOW_OK)
      break;
  }
  g_atomic_int_set(&a->returned, 1);
  return NULL;
}

static void
test_flush_unblocks_and_drops(void **state)
{
  (void) state;
  recorder r = { .seen = g_string_new(NULL), .block = TRUE };
  g_mutex_init(&r.lock);
  g_cond_init(&r.unblock);
  GstBus *bus;
  GstHarness *h = test_harness_for(make_mlp("slots", 2, "hidden-size", 16, NULL), &bus);
  gst_pad_add_probe(h->sinkpad, GST_PAD_PROBE_TYPE_DATA_DOWNSTREAM | GST_PAD_PROBE_TYPE_EVENT_FLUSH,
                    record_probe, &r, NULL);
  gst_harness_set_src_caps_str(h, "video/x-raw,format=GRAY8,width=64,height=64,framerate=0/1");

  /* Downstream stalls on frame 0; frames 1 and 2 fill the two slots; the
   * chain then waits for a slot with frame 3. */
  pusher_args a = { h, 0, 10, GST_FLOW_OK, 0 };
  GThread *t = g_thread_new("pusher", pusher, &a);
  wait_for_text(&r, "b0 ");
  g_usleep(100 * 1000);
  assert_false(g_atomic_int_get(&a.returned)); /* back-pressure holds the chain */

  assert_true(gst_harness_push_event(h, gst_event_new_flush_start()));
  g_thread_join(t);
  assert_int_equal(a.last, GST_FLOW_FLUSHING); /* the flush released it */

  assert_true(gst_harness_push_event(h, gst_event_new_flush_stop(TRUE)));
  GstSegment segment;
  gst_segment_init(&segment, GST_FORMAT_TIME);
  assert_true(gst_harness_push_event(h, gst_event_new_segment(&segment)));
  for (int i = 100; i < 104; i++)
    assert_int_equal(gst_harness_push(h, numbered_frame(i, 64 * 64)), GST_FLOW_OK);
  assert_true(gst_harness_push_event(h, gst_event_new_eos()));
  wait_for_text(&r, "eos");
  /* Nothing from before the flush comes out after it. */
  const char *after = strstr(r.seen->str, "flush-stop");
  assert_non_null(after);
  assert_string_equal(after, "flush-stop segment b100 b101 b102 b103 eos ");
  test_harness_finish(h, bus);
  g_string_free(r.seen, TRUE);
  g_mutex_clear(&r.lock);
  g_cond_clear(&r.unblock);
}

/* ---- errors ---------------------------------------------------------------- */

/* ---- queries ---------------------------------------------------------------- */

/* ---- real pipelines ---------------------------------------------------------- */

/* Generated weights of more layers: hidden-sizes, and the layers property
 * with other activations; each against the double reference of the same
 * model. */
static void
test_generated_layers(void **state)
{
  (void) state;
  test_rng rng;
  test_rng_seed(&rng, seed + 9);
  const uint32_t deep_outs[3] = { 33, 17, 4 }, gelu_outs[2] = { 20, 3 };
  const pp_act relu_last[3] = { { PP_ACT_IDENTITY, 0 },
                                { PP_ACT_IDENTITY, 0 },
                                { PP_ACT_RELU, 0 } };
  const pp_act gelu_acts[2] = { { PP_ACT_GELU, 0 }, { PP_ACT_LEAKY_RELU, 0.25f } };
  const struct {
    GstElement *element;
    unsigned n_layers;
    const uint32_t *outs;
    const pp_act *acts;
  } cases[] = {
    { make_mlp("hidden-sizes", "33, 17", "outputs", 4, NULL), 3, deep_outs, relu_last },
    { make_mlp("layers", "linear(45,20), gelu, linear(20,3), leaky_relu(0.25)", "hidden-size", 7,
               NULL),
      2, gelu_outs, gelu_acts },
  };
  for (size_t c = 0; c < G_N_ELEMENTS(cases); c++) {
    GstBus *bus;
    GstHarness *h = test_harness_for(cases[c].element, &bus);
    gst_harness_set_src_caps_str(h, "other/tensors,format=static,num_tensors=1,types=float32,"
                                    "dimensions=(string)45:7:1:1,framerate=10/1");
    pp_model *model = NULL;
    assert_int_equal(
        pp_model_generate_layers(45, cases[c].n_layers, cases[c].outs, cases[c].acts, &model), 0);
    push_tensor_and_check(h, model, &rng);
    pp_model_free(model);
    test_harness_finish(h, bus);
  }
}

int
main(int argc, char **argv)
{
  gst_init(&argc, &argv);
  seed = test_seed();
  if (!test_gst_backend(&backend_name))
    return 77;
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_rows_timestamps_and_caps),
    cmocka_unit_test(test_every_format_and_mapping),
    cmocka_unit_test(test_rgb_and_bgr_agree),
    cmocka_unit_test(test_precision_property),
    cmocka_unit_test(test_tensor_input),
    cmocka_unit_test(test_tensor_input_cwhn),
    cmocka_unit_test(test_generated_layers),
    cmocka_unit_test(test_caps_change_midstream),
    cmocka_unit_test(test_events_stay_in_order),
    cmocka_unit_test(test_flush_unblocks_and_drops),
  };
  return test_gst_run(tests, test_count_live_objects);
}
