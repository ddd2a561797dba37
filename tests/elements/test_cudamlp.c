// SPDX-License-Identifier: LGPL-2.1-or-later
/* cudamlp through GstHarness and real pipelines: results against an
 * independent reference for every format and mapping, timestamps, ordering of
 * events, EOS, flush, caps changes, errors, and state cycles. */
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
#include "piperun.h"
#include "testutil.h"
#include "gstmain.h"

static uint64_t seed;
/* The backend under test: "cpu" by default, "cuda" in the GPU suite. */
static const char *backend_name = "cpu";

/* ---- helpers ------------------------------------------------------------- */

static GstElement *
make_mlp(const char *first_property, ...)
{
  GstElement *e = gst_element_factory_make("cudamlp", NULL);
  assert_non_null(e);
  gst_util_set_object_arg(G_OBJECT(e), "backend", backend_name);
  /* Under compute-sanitizer every choice is timed once (tools/gpu-check.sh). */
  if (g_getenv("PP_TEST_TUNING"))
    gst_util_set_object_arg(G_OBJECT(e), "tuning", g_getenv("PP_TEST_TUNING"));
  va_list args;
  va_start(args, first_property);
  if (first_property)
    g_object_set_valist(G_OBJECT(e), first_property, args);
  va_end(args);
  return e;
}

/* A harness whose element posts to a bus we can read. */
static GstHarness *
harness_for(GstElement *element, GstBus **bus)
{
  *bus = gst_bus_new();
  gst_element_set_bus(element, *bus);
  GstHarness *h = gst_harness_new_with_element(element, "sink", "src");
  gst_object_unref(element); /* the harness holds its own reference */
  return h;
}

/* Messages left on the bus hold the element, which holds the bus: flush them. */
static void
finish(GstHarness *h, GstBus *bus)
{
  gst_bus_set_flushing(bus, TRUE);
  gst_harness_teardown(h);
  gst_object_unref(bus);
}

static gchar *
error_text(GstBus *bus, GstMessageType type)
{
  GstMessage *msg = gst_bus_pop_filtered(bus, type);
  if (!msg)
    return NULL;
  GError *err = NULL;
  gchar *debug = NULL;
  if (type == GST_MESSAGE_ERROR)
    gst_message_parse_error(msg, &err, &debug);
  else
    gst_message_parse_warning(msg, &err, &debug);
  gchar *text = g_strdup_printf("%s | %s", err->message, debug ? debug : "");
  g_error_free(err);
  g_free(debug);
  gst_message_unref(msg);
  return text;
}

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

static void
check_output_where(GstBuffer *out, const pp_model *model, const float *x, uint32_t n,
                   const char *where)
{
  assert_int_equal(gst_buffer_get_size(out), (gsize) n * model->o * sizeof(float));
  double *ref = g_new(double, (size_t) n * model->o), *mag = g_new(double, (size_t) n * model->o);
  test_reference_mlp(model, x, n, ref, mag);
  GstMapInfo map;
  gst_buffer_map(out, &map, GST_MAP_READ);
  const double err = test_scaled_error((const float *) map.data, ref, mag, (size_t) n * model->o);
  if (g_getenv("PP_DEBUG_DUMP") && !(err <= PP_FP32_REL_TOL))
    for (size_t i = 0; i < (size_t) n * model->o; i++)
      g_printerr("%zu: %.9g %.9g\n", i, ((const float *) map.data)[i], ref[i]);
  gst_buffer_unmap(out, &map);
  g_free(ref);
  g_free(mag);
  if (!(err <= PP_FP32_REL_TOL))
    fail_msg("%s: scaled error %.3e > %.0e", where, err, PP_FP32_REL_TOL);
}

#define check_output(out, model, x, n) check_output_where(out, model, x, n, G_STRLOC)

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
  GstHarness *h = harness_for(make_mlp("slots", 3, "hidden-size", 24, "outputs", 2, NULL), &bus);
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
  finish(h, bus);
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
  GstHarness *h = harness_for(e, &bus);
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
    check_output_where(out, model, x, n, caps);
    gst_buffer_unref(out);
    g_free(x);
    g_free(im.rgba);
  }
  pp_model_free(model);
  finish(h, bus);
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
    GstHarness *h = harness_for(make_mlp("hidden-size", 8, NULL), &bus);
    gst_harness_set_src_caps_str(h, i ? "video/x-raw,format=BGR,width=16,height=8,framerate=0/1"
                                      : "video/x-raw,format=RGB,width=16,height=8,framerate=0/1");
    assert_int_equal(gst_harness_push(h, encode_frame(&im, &formats[1 + i], &rng)), GST_FLOW_OK);
    results[i] = gst_harness_pull(h);
    finish(h, bus);
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
  GstHarness *h = harness_for(make_mlp("hidden-size", 33, "outputs", 4, NULL), &bus);
  gst_harness_set_src_caps_str(h, "other/tensors,format=static,num_tensors=1,types=float32,"
                                  "dimensions=(string)45:7:1:1,framerate=10/1");
  pp_model *model = generated(45, 33, 4, PP_HIDDEN_AUTO);
  for (int i = 0; i < 4; i++)
    push_tensor_and_check(h, model, &rng);
  pp_model_free(model);
  finish(h, bus);
}

static void
test_caps_change_midstream(void **state)
{
  (void) state;
  test_rng rng;
  test_rng_seed(&rng, seed + 6);
  GstBus *bus;
  GstHarness *h = harness_for(make_mlp("slots", 3, "hidden-size", 10, NULL), &bus);
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
  finish(h, bus);
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
  GstHarness *h = harness_for(make_mlp("slots", 4, "hidden-size", 64, NULL), &bus);
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
  finish(h, bus);
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
  GstHarness *h = harness_for(make_mlp("slots", 2, "hidden-size", 16, NULL), &bus);
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
  finish(h, bus);
  g_string_free(r.seen, TRUE);
  g_mutex_clear(&r.lock);
  g_cond_clear(&r.unblock);
}

/* ---- errors ---------------------------------------------------------------- */

/* A hand-made 3→4→2 model (0.weight 4×3, 2.weight 2×4) in a temporary file. */
static gchar *
write_small_model(gboolean truncate)
{
  static const char json[] =
      "{\"0.weight\":{\"dtype\":\"F32\",\"shape\":[4,3],\"data_offsets\":[0,48]},"
      "\"2.weight\":{\"dtype\":\"F32\",\"shape\":[2,4],\"data_offsets\":[48,80]}}";
  const gsize header = sizeof json - 1, len = 8 + header + 80;
  guint8 *bytes = g_malloc0(len);
  for (int i = 0; i < 8; i++)
    bytes[i] = (guint8) (header >> (8 * i));
  memcpy(bytes + 8, json, header);
  gchar *path = NULL;
  const int fd = g_file_open_tmp("pp-model-XXXXXX.safetensors", &path, NULL);
  assert_true(fd >= 0);
  close(fd);
  assert_true(g_file_set_contents(path, (gchar *) bytes, truncate ? len - 10 : len, NULL));
  g_free(bytes);
  return path;
}

static void
test_k_mismatch_is_not_negotiated(void **state)
{
  (void) state;
  g_autofree gchar *path = write_small_model(FALSE);
  GstBus *bus;
  GstHarness *h = harness_for(make_mlp("model", path, NULL), &bus);
  gst_harness_set_src_caps_str(h, "video/x-raw,format=GRAY8,width=5,height=4,framerate=0/1");
  assert_int_equal(gst_harness_push(h, gst_buffer_new_allocate(NULL, 8 * 4, NULL)),
                   GST_FLOW_NOT_NEGOTIATED);
  g_autofree gchar *text = error_text(bus, GST_MESSAGE_ERROR);
  assert_non_null(text);
  if (!strstr(text, "tensor '0.weight' is 4×3 but the frame gives K=5"))
    fail_msg("unexpected error: %s", text);
  finish(h, bus);

  /* The same model takes K=3: RGB frames one pixel wide. */
  h = harness_for(make_mlp("model", path, NULL), &bus);
  gst_harness_set_src_caps_str(h, "video/x-raw,format=RGB,width=1,height=2,framerate=0/1");
  assert_int_equal(gst_harness_push(h, gst_buffer_new_allocate(NULL, 8, NULL)), GST_FLOW_OK);
  GstBuffer *out = gst_harness_pull(h);
  assert_int_equal(gst_buffer_get_size(out), 2 * 2 * sizeof(float));
  gst_buffer_unref(out);
  finish(h, bus);
  g_unlink(path);
}

/* A source that offers every format and size negotiates frames that give
 * the model file its K (rows: K = width × channels = 3 here), instead of
 * its first format and failing. */
static void
test_caps_follow_the_model(void **state)
{
  (void) state;
  g_autofree gchar *path = write_small_model(FALSE);
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
  GstHarness *h = harness_for(make_mlp(NULL, NULL), &bus);
  /* Not in the template: refused before the element sees it. */
  gst_harness_set_src_caps_str(h, "video/x-raw,format=Y444,width=8,height=8,framerate=0/1");
  assert_int_equal(gst_harness_push(h, gst_buffer_new_allocate(NULL, 192, NULL)),
                   GST_FLOW_NOT_NEGOTIATED);
  finish(h, bus);

  h = harness_for(make_mlp(NULL, NULL), &bus);
  gst_harness_set_src_caps_str(h, "other/tensors,format=static,num_tensors=1,types=float32,"
                                  "dimensions=(string)8:0:1:1,framerate=0/1");
  assert_int_equal(gst_harness_push(h, gst_buffer_new_allocate(NULL, 32, NULL)),
                   GST_FLOW_NOT_NEGOTIATED);
  g_autofree gchar *text = error_text(bus, GST_MESSAGE_ERROR);
  assert_non_null(text);
  assert_non_null(strstr(text, "dimensions"));
  finish(h, bus);
}

static void
test_short_buffer_is_an_error(void **state)
{
  (void) state;
  GstBus *bus;
  GstHarness *h = harness_for(make_mlp(NULL, NULL), &bus);
  gst_harness_set_src_caps_str(h, "video/x-raw,format=RGB,width=10,height=10,framerate=0/1");
  /* RGB rows are padded to 32 bytes: the frame needs 320. */
  assert_int_equal(gst_harness_push(h, gst_buffer_new_allocate(NULL, 300, NULL)), GST_FLOW_ERROR);
  g_autofree gchar *text = error_text(bus, GST_MESSAGE_ERROR);
  assert_non_null(text);
  assert_non_null(strstr(text, "buffer of 300 bytes; the caps need 320 per frame"));
  finish(h, bus);
}

static void
expect_start_failure(GstElement *e, const char *needle)
{
  GstBus *bus = gst_bus_new();
  gst_element_set_bus(e, bus);
  assert_int_equal(gst_element_set_state(e, GST_STATE_PAUSED), GST_STATE_CHANGE_FAILURE);
  g_autofree gchar *text = error_text(bus, GST_MESSAGE_ERROR);
  assert_non_null(text);
  if (!strstr(text, needle))
    fail_msg("error \"%s\" lacks \"%s\"", text, needle);
  gst_element_set_state(e, GST_STATE_NULL);
  gst_bus_set_flushing(bus, TRUE);
  gst_object_unref(e);
  gst_object_unref(bus);
}

static void
test_bad_model_fails_at_start(void **state)
{
  (void) state;
  expect_start_failure(make_mlp("model", "/nonexistent/model.safetensors", NULL),
                       "No such file or directory");
  g_autofree gchar *path = write_small_model(TRUE);
  expect_start_failure(make_mlp("model", path, NULL), "truncated");
  g_unlink(path);
}

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
    GstHarness *h = harness_for(cases[c].element, &bus);
    gst_harness_set_src_caps_str(h, "other/tensors,format=static,num_tensors=1,types=float32,"
                                    "dimensions=(string)45:7:1:1,framerate=10/1");
    pp_model *model = NULL;
    assert_int_equal(
        pp_model_generate_layers(45, cases[c].n_layers, cases[c].outs, cases[c].acts, &model), 0);
    push_tensor_and_check(h, model, &rng);
    pp_model_free(model);
    finish(h, bus);
  }
}

/* A layers property that cannot be: refused with what is wrong, at caps
 * for generated weights, at start for a file. A file with no description
 * runs, with a warning that says what was assumed. */
static void
test_layers_errors_and_warning(void **state)
{
  (void) state;
  /* A description that cannot be generated fails the start. */
  expect_start_failure(make_mlp("layers", "linear(45,8), softmax, linear(8,1)", NULL),
                       "module 2: unknown module 'softmax'");
  expect_start_failure(make_mlp("layers", "linear, relu, linear(8,1)", NULL),
                       "Linear layer 1 has no widths");
  expect_start_failure(make_mlp("hidden-sizes", "0", NULL), "'0' is not a width of 1..");
  /* One the frames do not fit is refused with the caps. */
  static const struct {
    const char *layers, *needle;
  } bad[] = {
    { "linear(44,8), relu, linear(8,1)", "takes 44 inputs but the frames give K=45" },
  };
  for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
    GstBus *bus;
    GstHarness *h = harness_for(make_mlp("layers", bad[i].layers, NULL), &bus);
    gst_harness_set_src_caps_str(h, "other/tensors,format=static,num_tensors=1,types=float32,"
                                    "dimensions=(string)45:7:1:1,framerate=10/1");
    assert_int_equal(gst_harness_push(h, gst_buffer_new_allocate(NULL, 7 * 45 * 4, NULL)),
                     GST_FLOW_NOT_NEGOTIATED);
    g_autofree gchar *text = error_text(bus, GST_MESSAGE_ERROR);
    if (!text || !strstr(text, bad[i].needle))
      fail_msg("layers=%s: error \"%s\" lacks \"%s\"", bad[i].layers, text, bad[i].needle);
    finish(h, bus);
  }
  g_autofree gchar *path = write_small_model(FALSE);
  expect_start_failure(
      make_mlp("model", path, "layers", "linear, gelu, linear, relu, linear", NULL),
      "the layers property describes 3 Linear layers but the file holds 2");

  GstBus *bus;
  GstHarness *h = harness_for(make_mlp("model", path, NULL), &bus);
  gst_harness_set_src_caps_str(h, "video/x-raw,format=RGB,width=1,height=2,framerate=0/1");
  assert_int_equal(gst_harness_push(h, gst_buffer_new_allocate(NULL, 8, NULL)), GST_FLOW_OK);
  gst_buffer_unref(gst_harness_pull(h));
  g_autofree gchar *warning = error_text(bus, GST_MESSAGE_WARNING);
  if (!warning || !strstr(warning, "two-layer convention: Linear, ReLU, Linear, ReLU"))
    fail_msg("expected the assumed-activations warning, got \"%s\"", warning);
  finish(h, bus);
  /* Described, the same file runs without one. */
  h = harness_for(make_mlp("model", path, "layers", "linear, tanh, linear", NULL), &bus);
  gst_harness_set_src_caps_str(h, "video/x-raw,format=RGB,width=1,height=2,framerate=0/1");
  assert_int_equal(gst_harness_push(h, gst_buffer_new_allocate(NULL, 8, NULL)), GST_FLOW_OK);
  gst_buffer_unref(gst_harness_pull(h));
  g_autofree gchar *none = error_text(bus, GST_MESSAGE_WARNING);
  assert_null(none);
  finish(h, bus);
  g_unlink(path);
}

static void
test_backend_choice_without_gpu(void **state)
{
  (void) state;
  if (pp_backend_have_cuda() && test_cuda_usable())
    skip(); /* a GPU is here: nothing to fall back from */
  GstElement *e = gst_element_factory_make("cudamlp", NULL);
  gst_util_set_object_arg(G_OBJECT(e), "backend", "cuda");
  expect_start_failure(e, "CUDA");

  /* auto: runs on the CPU and says so. */
  e = gst_element_factory_make("cudamlp", NULL);
  GstBus *bus = gst_bus_new();
  gst_element_set_bus(e, bus);
  assert_int_not_equal(gst_element_set_state(e, GST_STATE_PAUSED), GST_STATE_CHANGE_FAILURE);
  g_autofree gchar *text = error_text(bus, GST_MESSAGE_WARNING);
  assert_non_null(text);
  assert_non_null(strstr(text, "CPU"));
  GstStructure *stats;
  g_object_get(e, "stats", &stats, NULL);
  assert_string_equal(gst_structure_get_string(stats, "backend"), "cpu");
  gst_structure_free(stats);
  gst_element_set_state(e, GST_STATE_NULL);
  gst_bus_set_flushing(bus, TRUE);
  gst_object_unref(e);
  gst_object_unref(bus);
}

/* ---- queries ---------------------------------------------------------------- */

static void
test_latency_query(void **state)
{
  (void) state;
  GstBus *bus;
  GstHarness *h = harness_for(make_mlp("slots", 3, NULL), &bus);
  gst_harness_set_src_caps_str(h, "video/x-raw,format=GRAY8,width=8,height=8,framerate=25/1");
  gst_harness_push(h, gst_buffer_new_allocate(NULL, 64, NULL));
  gst_buffer_unref(gst_harness_pull(h));
  gst_harness_set_upstream_latency(h, 10 * GST_MSECOND);
  GstQuery *q = gst_query_new_latency();
  assert_true(gst_pad_peer_query(h->sinkpad, q));
  gboolean live;
  GstClockTime min, max;
  gst_query_parse_latency(q, &live, &min, &max);
  /* Upstream's 10 ms plus one 40 ms frame period. */
  assert_int_equal(min, 50 * GST_MSECOND);
  gst_query_unref(q);
  finish(h, bus);
}

static void
test_allocation_query_offers_pool(void **state)
{
  (void) state;
  GstBus *bus;
  GstHarness *h = harness_for(make_mlp("slots", 3, NULL), &bus);
  gst_harness_set_src_caps_str(h, "video/x-raw,format=RGBA,width=16,height=4,framerate=0/1");
  GstCaps *caps = gst_caps_from_string("video/x-raw,format=RGBA,width=16,height=4,framerate=0/1");
  GstQuery *q = gst_query_new_allocation(caps, TRUE);
  assert_true(gst_pad_peer_query(h->srcpad, q));
  assert_int_equal(gst_query_get_n_allocation_pools(q), 1);
  GstBufferPool *pool;
  guint size, min, max;
  gst_query_parse_nth_allocation_pool(q, 0, &pool, &size, &min, &max);
  assert_non_null(pool);
  assert_int_equal(size, 16 * 4 * 4);
  assert_int_equal(min, 7); /* one per frame in flight (2 per slot), one being filled */
  GstAllocator *allocator;
  GstAllocationParams params;
  gst_query_parse_nth_allocation_param(q, 0, &allocator, &params);
  assert_string_equal(allocator->mem_type, "PingpongPinnedMemory");
  assert_int_equal(params.align, 4095);

  /* Frames written into that pool go through as any other. */
  assert_true(gst_buffer_pool_set_active(pool, TRUE));
  GstBuffer *buf;
  assert_int_equal(gst_buffer_pool_acquire_buffer(pool, &buf, NULL), GST_FLOW_OK);
  GstMapInfo map;
  gst_buffer_map(buf, &map, GST_MAP_WRITE);
  assert_int_equal((guintptr) map.data % 4096, 0);
  memset(map.data, 200, map.size);
  gst_buffer_unmap(buf, &map);
  assert_int_equal(gst_harness_push(h, buf), GST_FLOW_OK);
  gst_buffer_unref(gst_harness_pull(h));
  gst_buffer_pool_set_active(pool, FALSE);
  gst_object_unref(pool);
  gst_object_unref(allocator);
  gst_query_unref(q);
  gst_caps_unref(caps);
  finish(h, bus);
}

/* ---- real pipelines ---------------------------------------------------------- */

static GstPadProbeReturn
count_buffers(GstPad *pad, GstPadProbeInfo *info, gpointer data)
{
  (void) pad, (void) info;
  g_atomic_int_inc((gint *) data);
  return GST_PAD_PROBE_OK;
}

static void
test_state_cycles_with_frames_in_flight(void **state)
{
  (void) state;
  g_autofree gchar *desc = g_strdup_printf(
      "videotestsrc pattern=snow ! video/x-raw,format=GRAY8,width=256,height=128 ! "
      "cudamlp name=mlp backend=%s slots=3 hidden-size=256 ! fakesink name=sink sync=false",
      backend_name);
  GstElement *pipeline = gst_parse_launch(desc, NULL);
  assert_non_null(pipeline);
  GstElement *sink = gst_bin_get_by_name(GST_BIN(pipeline), "sink");
  GstPad *pad = gst_element_get_static_pad(sink, "sink");
  gint seen = 0;
  gst_pad_add_probe(pad, GST_PAD_PROBE_TYPE_BUFFER, count_buffers, &seen, NULL);
  test_rng rng;
  test_rng_seed(&rng, seed);
  for (int cycle = 0; cycle < 40; cycle++) {
    const gint before = g_atomic_int_get(&seen);
    assert_int_not_equal(gst_element_set_state(pipeline, GST_STATE_PLAYING),
                         GST_STATE_CHANGE_FAILURE);
    /* Let frames flow, then pull the plug with some still in the slots. */
    while (g_atomic_int_get(&seen) < before + 2)
      g_usleep(200);
    g_usleep(test_rng_next(&rng) % 3000);
    assert_int_equal(gst_element_set_state(pipeline, GST_STATE_NULL), GST_STATE_CHANGE_SUCCESS);
  }
  gst_object_unref(pad);
  gst_object_unref(sink);
  gst_object_unref(pipeline);
}

static void
test_pipeline_runs_to_eos(void **state)
{
  (void) state;
  g_autofree gchar *desc =
      g_strdup_printf("videotestsrc num-buffers=60 ! video/x-raw,format=RGB,width=96,height=64 ! "
                      "cudamlp name=mlp backend=%s mapping=patches patch-size=8 ! fakesink",
                      backend_name);
  GstElement *pipeline = NULL;
  g_autofree gchar *error = test_run_pipeline(desc, &pipeline);
  if (error)
    fail_msg("%s", error);
  GstElement *mlp = gst_bin_get_by_name(GST_BIN(pipeline), "mlp");
  /* The figures survive the stop. */
  GstStructure *stats;
  g_object_get(mlp, "stats", &stats, NULL);
  guint64 frames = 0;
  gst_structure_get_uint64(stats, "frames", &frames);
  assert_int_equal(frames, 60);
  gst_structure_free(stats);
  gst_object_unref(mlp);
  gst_object_unref(pipeline);
}

/* With GST_TRACERS=leaks (the test environment sets it), every GstObject and
 * GstMiniObject made after gst_init must be gone once the tests finish. */
static int
count_live_objects(void)
{
  /* Tasks drop their last reference on a pool thread after join: wait. */
  gst_task_cleanup_all();
  GList *tracers = gst_tracing_get_active_tracers();
  int live = 0;
  for (GList *l = tracers; l; l = l->next) {
    if (!g_str_equal(G_OBJECT_TYPE_NAME(l->data), "GstLeaksTracer"))
      continue;
    GstStructure *info = NULL;
    g_signal_emit_by_name(l->data, "get-live-objects", &info);
    const GValue *list = gst_structure_get_value(info, "live-objects-list");
    live = gst_value_list_get_size(list);
    for (int i = 0; i < live; i++) {
      const GstStructure *obj = gst_value_get_structure(gst_value_list_get_value(list, i));
      gchar *text = gst_structure_to_string(obj);
      g_printerr("still alive: %s\n", text);
      g_free(text);
    }
    gst_structure_free(info);
  }
  g_list_free_full(tracers, gst_object_unref);
  return live;
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
    cmocka_unit_test(test_tensor_input),
    cmocka_unit_test(test_caps_change_midstream),
    cmocka_unit_test(test_events_stay_in_order),
    cmocka_unit_test(test_flush_unblocks_and_drops),
    cmocka_unit_test(test_k_mismatch_is_not_negotiated),
    cmocka_unit_test(test_videoscale_picks_a_fitting_frame),
    cmocka_unit_test(test_caps_follow_the_model),
    cmocka_unit_test(test_unacceptable_caps),
    cmocka_unit_test(test_short_buffer_is_an_error),
    cmocka_unit_test(test_bad_model_fails_at_start),
    cmocka_unit_test(test_generated_layers),
    cmocka_unit_test(test_layers_errors_and_warning),
    cmocka_unit_test(test_backend_choice_without_gpu),
    cmocka_unit_test(test_latency_query),
    cmocka_unit_test(test_allocation_query_offers_pool),
    cmocka_unit_test(test_state_cycles_with_frames_in_flight),
    cmocka_unit_test(test_pipeline_runs_to_eos),
  };
  if (g_getenv("PP_TEST_FILTER"))
    cmocka_set_test_filter(g_getenv("PP_TEST_FILTER"));
  int failed = cmocka_run_group_tests(tests, NULL, NULL);
  failed += count_live_objects();
  return test_gst_finish(failed);
}
