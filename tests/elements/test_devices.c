// SPDX-License-Identifier: LGPL-2.1-or-later
/* cudamlp with device-id spreading its slots over several devices: every
 * frame's result against an independent float64 reference, in input order
 * with its own timestamps, the per-device stats adding up, and the errors a
 * user can provoke (a bad list, fewer slots than devices).
 *
 * On the CPU backend ("devices" are CPU backends, one per list entry) this
 * runs in the elements suite; with PP_TEST_BACKEND=cuda it is the GPU
 * suite's multi-GPU case and skips with fewer than two GPUs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <gst/check/gstharness.h>
#include <gst/gst.h>
#include <string.h>

#include "backend.h"
#include "model.h"
#include "mlpharness.h"
#include "testutil.h"
#include "gstmain.h"

static uint64_t seed;
static const char *backend_name = "cpu";
/* The list under test: three "devices" on the CPU, every GPU on CUDA. */
static const char *device_list = "0,1,2";
static unsigned n_devices = 3;

static GstHarness *
harness_with(const char *devices, guint slots, GstBus **bus)
{
  GstElement *e = gst_element_factory_make("cudamlp", NULL);
  assert_non_null(e);
  gst_util_set_object_arg(G_OBJECT(e), "backend", backend_name);
  g_object_set(e, "device-id", devices, "slots", slots, "hidden-size", 48, "outputs", 3, NULL);
  *bus = gst_bus_new();
  gst_element_set_bus(e, *bus);
  GstHarness *h = gst_harness_new_with_element(e, "sink", "src");
  gst_object_unref(e);
  return h;
}

static void
finish(GstHarness *h, GstBus *bus)
{
  gst_bus_set_flushing(bus, TRUE);
  gst_harness_teardown(h);
  gst_object_unref(bus);
}

enum { K = 96, N = 20, FRAMES = 40 };

/* Frames through `slots` slots spread over the list: each result is its own
 * frame's (inputs differ frame to frame, so a swap shows), in order. */
static void
run_spread(guint slots)
{
  test_rng rng;
  test_rng_seed(&rng, seed + slots);
  GstBus *bus;
  GstHarness *h = harness_with(device_list, slots, &bus);
  gst_harness_set_src_caps_str(h, "other/tensors,format=static,num_tensors=1,types=float32,"
                                  "dimensions=(string)96:20:1:1,framerate=30/1");
  pp_model *model = NULL;
  assert_int_equal(pp_model_generate(K, 48, 3, PP_HIDDEN_AUTO, &model), 0);
  static float xs[FRAMES][N * K];
  /* Push ahead of pulling, so every slot on every device has work. */
  for (int i = 0; i < FRAMES; i++) {
    test_rng_fill_floats(&rng, xs[i], N * K, -2, 2);
    GstBuffer *buf = gst_buffer_new_memdup(xs[i], sizeof xs[i]);
    GST_BUFFER_PTS(buf) = i * 33 * GST_MSECOND;
    GST_BUFFER_OFFSET(buf) = i;
    assert_int_equal(gst_harness_push(h, buf), GST_FLOW_OK);
  }
  for (int i = 0; i < FRAMES; i++) {
    GstBuffer *out = gst_harness_pull(h);
    assert_int_equal(GST_BUFFER_PTS(out), i * 33 * GST_MSECOND);
    assert_int_equal(GST_BUFFER_OFFSET(out), i);
    g_autofree gchar *what = g_strdup_printf("frame %d", i);
    test_check_scores(out, model, xs[i], N, what);
    gst_buffer_unref(out);
  }

  /* Per device: slot i counts for the (i mod G)-th entry of the list. */
  GstStructure *stats;
  g_object_get(h->element, "stats", &stats, NULL);
  const GValue *devices = gst_structure_get_value(stats, "devices");
  assert_non_null(devices);
  assert_int_equal(gst_value_array_get_size(devices), n_devices);
  guint64 total = 0;
  g_auto(GStrv) ids = g_strsplit(device_list, ",", -1);
  for (guint d = 0; d < n_devices; d++) {
    const GstStructure *dev = gst_value_get_structure(gst_value_array_get_value(devices, d));
    gint id;
    guint dev_slots;
    guint64 frames;
    double latency;
    assert_true(gst_structure_get_int(dev, "id", &id));
    assert_int_equal(id, atoi(ids[d]));
    assert_true(gst_structure_get_uint(dev, "slots", &dev_slots));
    assert_int_equal(dev_slots, (slots - d + n_devices - 1) / n_devices);
    assert_true(gst_structure_get_uint64(dev, "frames", &frames));
    /* Frame i took slot i mod slots: count this device's by hand. */
    guint64 expected = 0;
    for (guint i = 0; i < FRAMES; i++)
      expected += (i % slots) % n_devices == d;
    assert_int_equal(frames, expected);
    assert_true(gst_structure_get_double(dev, "latency-mean-us", &latency) && latency > 0);
    total += frames;
  }
  assert_int_equal(total, FRAMES);
  if (g_str_equal(backend_name, "cuda")) {
    /* "<path> on devices 0,1" when every device chose alike, else "<path>
     * on device 0 | <path> on device 1": each times its own arrangement. */
    const gchar *detail = gst_structure_get_string(stats, "detail");
    g_autofree gchar *alike = g_strdup_printf("on devices %s", device_list);
    if (!g_str_has_suffix(detail, alike))
      for (guint d = 0; d < n_devices; d++) {
        g_autofree gchar *own = g_strdup_printf("on device %s", ids[d]);
        if (!strstr(detail, own))
          fail_msg("the detail \"%s\" does not name device %s", detail, ids[d]);
      }
  }
  gst_structure_free(stats);
  pp_model_free(model);
  finish(h, bus);
}

static void
test_spread_results_in_order(void **state)
{
  (void) state;
  run_spread(n_devices);
  run_spread(n_devices + 1);
  run_spread(2 * n_devices + 1);
}

static void
expect_error_text(GstBus *bus, const char *needle)
{
  GstMessage *msg = gst_bus_pop_filtered(bus, GST_MESSAGE_ERROR);
  assert_non_null(msg);
  GError *err = NULL;
  gchar *debug = NULL;
  gst_message_parse_error(msg, &err, &debug);
  g_autofree gchar *text = g_strdup_printf("%s | %s", err->message, debug ? debug : "");
  if (!strstr(text, needle))
    fail_msg("error \"%s\" lacks \"%s\"", text, needle);
  g_error_free(err);
  g_free(debug);
  gst_message_unref(msg);
}

/* A list that does not parse stops the element from starting. */
static void
expect_start_error(const char *devices, const char *needle)
{
  GstElement *e = gst_element_factory_make("cudamlp", NULL);
  gst_util_set_object_arg(G_OBJECT(e), "backend", backend_name);
  gst_util_set_object_arg(G_OBJECT(e), "device-id", devices);
  GstBus *bus = gst_bus_new();
  gst_element_set_bus(e, bus);
  assert_int_equal(gst_element_set_state(e, GST_STATE_PAUSED), GST_STATE_CHANGE_FAILURE);
  expect_error_text(bus, needle);
  gst_element_set_state(e, GST_STATE_NULL);
  gst_bus_set_flushing(bus, TRUE);
  gst_object_unref(e);
  gst_object_unref(bus);
}

static void
test_errors_say_what_to_fix(void **state)
{
  (void) state;
  expect_start_error("0,zero", "give a device number");
  expect_start_error("1,1", "names device 1 twice");
  /* Too few slots for the list: the first caps fail, and say so. */
  GstBus *bus;
  GstHarness *h = harness_with(device_list, n_devices - 1, &bus);
  gst_harness_set_src_caps_str(h, "other/tensors,format=static,num_tensors=1,types=float32,"
                                  "dimensions=(string)96:20:1:1,framerate=30/1");
  float x[N * K] = { 0.5f };
  assert_int_not_equal(gst_harness_push(h, gst_buffer_new_memdup(x, sizeof x)), GST_FLOW_OK);
  expect_error_text(bus, "set slots to at least");
  finish(h, bus);
}

static void
test_property_reads_back(void **state)
{
  (void) state;
  GstElement *e = gst_element_factory_make("cudamlp", NULL);
  gchar *value = NULL;
  g_object_get(e, "device-id", &value, NULL);
  assert_string_equal(value, "0");
  g_free(value);
  gst_util_set_object_arg(G_OBJECT(e), "device-id", "-1");
  g_object_get(e, "device-id", &value, NULL);
  assert_string_equal(value, "-1");
  g_free(value);
  gst_object_unref(e);
}

int
main(int argc, char **argv)
{
  gst_init(&argc, &argv);
  seed = test_seed();
  if (!test_gst_backend(&backend_name))
    return 77;
  if (g_str_equal(backend_name, "cuda")) {
    const int count = pp_backend_count_devices();
    if (count < 2) {
      g_printerr("%d CUDA device: the multi-GPU case needs two\n", count);
      return 77;
    }
    n_devices = (unsigned) MIN(count, PP_MAX_DEVICES / 2);
    GString *list = g_string_new("0");
    for (unsigned i = 1; i < n_devices; i++)
      g_string_append_printf(list, ",%u", i);
    device_list = g_string_free(list, FALSE);
  }
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_spread_results_in_order),
    cmocka_unit_test(test_errors_say_what_to_fix),
    cmocka_unit_test(test_property_reads_back),
  };
  return test_gst_run(tests, NULL);
}
