// SPDX-License-Identifier: LGPL-2.1-or-later
/* cudamlp as an element: model files and the layers property refused at
 * start with a reason, warnings about what was assumed, the backend chosen
 * where there is no GPU, the latency and allocation queries answered, state
 * cycles with frames in flight, and a pipeline run to EOS. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <glib/gstdio.h>
#include <gst/gst.h>
#include <gst/video/video.h>
#include <string.h>

#include "backend.h"
#include "mlpharness.h"
#include "piperun.h"
#include "model.h"
#include "testutil.h"
#include "gstmain.h"

/* The backend under test: "cpu" by default, "cuda" in the GPU suite. */
static const char *backend_name = "cpu";
static uint64_t seed;
#define make_mlp(...) test_make_mlp(backend_name, __VA_ARGS__)

static void
expect_start_failure(GstElement *e, const char *needle)
{
  GstBus *bus = gst_bus_new();
  gst_element_set_bus(e, bus);
  assert_int_equal(gst_element_set_state(e, GST_STATE_PAUSED), GST_STATE_CHANGE_FAILURE);
  g_autofree gchar *text = test_bus_text(bus, GST_MESSAGE_ERROR);
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
  g_autofree gchar *path = test_write_small_model(TRUE);
  expect_start_failure(make_mlp("model", path, NULL), "truncated");
  g_unlink(path);
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
    GstHarness *h = test_harness_for(make_mlp("layers", bad[i].layers, NULL), &bus);
    gst_harness_set_src_caps_str(h, "other/tensors,format=static,num_tensors=1,types=float32,"
                                    "dimensions=(string)45:7:1:1,framerate=10/1");
    assert_int_equal(gst_harness_push(h, gst_buffer_new_allocate(NULL, 7 * 45 * 4, NULL)),
                     GST_FLOW_NOT_NEGOTIATED);
    g_autofree gchar *text = test_bus_text(bus, GST_MESSAGE_ERROR);
    if (!text || !strstr(text, bad[i].needle))
      fail_msg("layers=%s: error \"%s\" lacks \"%s\"", bad[i].layers, text, bad[i].needle);
    test_harness_finish(h, bus);
  }
  g_autofree gchar *path = test_write_small_model(FALSE);
  expect_start_failure(
      make_mlp("model", path, "layers", "linear, gelu, linear, relu, linear", NULL),
      "the layers property describes 3 Linear layers but the file holds 2");

  GstBus *bus;
  GstHarness *h = test_harness_for(make_mlp("model", path, NULL), &bus);
  gst_harness_set_src_caps_str(h, "video/x-raw,format=RGB,width=1,height=2,framerate=0/1");
  assert_int_equal(gst_harness_push(h, gst_buffer_new_allocate(NULL, 8, NULL)), GST_FLOW_OK);
  gst_buffer_unref(gst_harness_pull(h));
  g_autofree gchar *warning = test_bus_text(bus, GST_MESSAGE_WARNING);
  if (!warning || !strstr(warning, "two-layer convention: Linear, ReLU, Linear, ReLU"))
    fail_msg("expected the assumed-activations warning, got \"%s\"", warning);
  test_harness_finish(h, bus);
  /* Described, the same file runs without one. */
  h = test_harness_for(make_mlp("model", path, "layers", "linear, tanh, linear", NULL), &bus);
  gst_harness_set_src_caps_str(h, "video/x-raw,format=RGB,width=1,height=2,framerate=0/1");
  assert_int_equal(gst_harness_push(h, gst_buffer_new_allocate(NULL, 8, NULL)), GST_FLOW_OK);
  gst_buffer_unref(gst_harness_pull(h));
  g_autofree gchar *none = test_bus_text(bus, GST_MESSAGE_WARNING);
  assert_null(none);
  test_harness_finish(h, bus);
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
  g_autofree gchar *text = test_bus_text(bus, GST_MESSAGE_WARNING);
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

static void
test_latency_query(void **state)
{
  (void) state;
  GstBus *bus;
  GstHarness *h = test_harness_for(make_mlp("slots", 3, NULL), &bus);
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
  test_harness_finish(h, bus);
}

static void
test_allocation_query_offers_pool(void **state)
{
  (void) state;
  GstBus *bus;
  GstHarness *h = test_harness_for(make_mlp("slots", 3, NULL), &bus);
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
  test_harness_finish(h, bus);
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
  gst_pad_add_probe(pad, GST_PAD_PROBE_TYPE_BUFFER, test_count_buffers, &seen, NULL);
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

static gboolean
is_ascii(const gchar *text)
{
  for (const guchar *c = (const guchar *) text; c && *c; c++)
    if (*c > 0x7e)
      return FALSE;
  return TRUE;
}

/* What gst-inspect-1.0 prints of every element of ours (details,
 * properties, enum values) is plain ASCII: a C or POSIX locale shows UTF-8
 * as '?'. */
static void
test_inspect_text_is_ascii(void **state)
{
  (void) state;
  static const char *const factories[] = { "cudamlp", "scoreoverlay", "uringsrc", "uringsink" };
  for (size_t f = 0; f < G_N_ELEMENTS(factories); f++) {
    GstElement *e = gst_element_factory_make(factories[f], NULL);
    if (!e)
      continue; /* uringsrc, uringsink: built with liburing only */
    GstElementFactory *factory = gst_element_get_factory(e);
    static const char *const keys[] = { GST_ELEMENT_METADATA_LONGNAME,
                                        GST_ELEMENT_METADATA_DESCRIPTION,
                                        GST_ELEMENT_METADATA_KLASS };
    for (size_t k = 0; k < G_N_ELEMENTS(keys); k++)
      if (!is_ascii(gst_element_factory_get_metadata(factory, keys[k])))
        fail_msg("%s's %s is not ASCII", factories[f], keys[k]);
    guint n;
    GParamSpec **specs = g_object_class_list_properties(G_OBJECT_GET_CLASS(e), &n);
    for (guint i = 0; i < n; i++) {
      if (!is_ascii(g_param_spec_get_blurb(specs[i])) || !is_ascii(g_param_spec_get_nick(specs[i])))
        fail_msg("%s's property %s: \"%s\" is not ASCII", factories[f], specs[i]->name,
                 g_param_spec_get_blurb(specs[i]));
      if (G_IS_PARAM_SPEC_ENUM(specs[i])) {
        const GEnumClass *values = G_PARAM_SPEC_ENUM(specs[i])->enum_class;
        for (guint v = 0; v < values->n_values; v++)
          if (!is_ascii(values->values[v].value_name))
            fail_msg("%s's property %s: value \"%s\" is not ASCII", factories[f], specs[i]->name,
                     values->values[v].value_name);
      }
    }
    g_free(specs);
    gst_object_unref(e);
  }
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
  assert_int_equal(test_stat_u64(mlp, "frames"), 60);
  gst_object_unref(mlp);
  gst_object_unref(pipeline);
}

int
main(int argc, char **argv)
{
  gst_init(&argc, &argv);
  seed = test_seed();
  if (!test_gst_backend(&backend_name))
    return 77;
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_bad_model_fails_at_start),
    cmocka_unit_test(test_latency_query),
    cmocka_unit_test(test_allocation_query_offers_pool),
    cmocka_unit_test(test_state_cycles_with_frames_in_flight),
    cmocka_unit_test(test_pipeline_runs_to_eos),
    cmocka_unit_test(test_inspect_text_is_ascii),
    cmocka_unit_test(test_layers_errors_and_warning),
    cmocka_unit_test(test_backend_choice_without_gpu),
  };
  return test_gst_run(tests, test_count_live_objects);
}
