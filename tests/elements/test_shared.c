// SPDX-License-Identifier: LGPL-2.1-or-later
/* cudamlp with shared=true: several elements with the same settings run on
 * one backend (stats' streams), each stream's results its own (against an
 * independent float64 reference), in its order with its timestamps, while
 * the streams' frames interleave; an element with another model runs on a
 * backend of its own; a stream that stops leaves the others running. The
 * same with max-batch=4 (several streams' frames in one job), and on the
 * GPU with plans whose layers run on cuBLAS (batches of fewer frames on
 * GEMMs made for their rows) and split.
 *
 * On the CPU backend in the elements suite; with PP_TEST_BACKEND=cuda in
 * the GPU suite. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <gst/check/gstharness.h>
#include <gst/gst.h>
#include <string.h>

#include "model.h"
#include "mlpharness.h"
#include "testutil.h"
#include "gstmain.h"

static uint64_t seed;
static const char *backend_name = "cpu";

enum { K = 96, N = 20, STREAMS = 5, FRAMES = 24 };
#define CAPS                                                                                       \
  "other/tensors,format=static,num_tensors=1,types=float32,dimensions=(string)96:20:1:1,"          \
  "framerate=30/1"

/* How the streams run: frames a job, and a plan (NULL: tuned). */
typedef struct {
  guint max_batch;
  const char *plan;
} sharing;

static GstHarness *
shared_harness(guint hidden, const sharing *how)
{
  GstElement *e = gst_element_factory_make("cudamlp", NULL);
  assert_non_null(e);
  gst_util_set_object_arg(G_OBJECT(e), "backend", backend_name);
  g_object_set(e, "shared", TRUE, "slots", 2, "hidden-size", hidden, "outputs", 3, "max-batch",
               how->max_batch, "plan", how->plan, NULL);
  GstHarness *h = gst_harness_new_with_element(e, "sink", "src");
  gst_object_unref(e);
  gst_harness_set_src_caps_str(h, CAPS);
  return h;
}

static guint
stat_uint(GstHarness *h, const char *field)
{
  GstStructure *stats;
  guint value = 0;
  g_object_get(h->element, "stats", &stats, NULL);
  assert_true(gst_structure_get_uint(stats, field, &value));
  gst_structure_free(stats);
  return value;
}

static void
push_frame(GstHarness *h, const float *x, int stream, int frame)
{
  GstBuffer *buf = gst_buffer_new_memdup(x, sizeof(float) * N * K);
  GST_BUFFER_PTS(buf) = (frame * 33 + stream) * GST_MSECOND;
  GST_BUFFER_OFFSET(buf) = frame;
  assert_int_equal(gst_harness_push(h, buf), GST_FLOW_OK);
}

static void
pull_frame(GstHarness *h, const pp_model *model, const float *x, int stream, int frame)
{
  GstBuffer *out = gst_harness_pull(h);
  assert_int_equal(GST_BUFFER_PTS(out), (frame * 33 + stream) * GST_MSECOND);
  assert_int_equal(GST_BUFFER_OFFSET(out), frame);
  g_autofree gchar *what = g_strdup_printf("stream %d frame %d", stream, frame);
  test_check_scores(out, model, x, N, what);
  gst_buffer_unref(out);
}

/* Five streams on one backend, frames pushed round-robin two ahead of
 * pulling, so every slot holds another stream's frame; a sixth with
 * another model on its own; the first stream stopped halfway. */
static void
streams_share_one_backend(const sharing *how)
{
  test_rng rng;
  test_rng_seed(&rng, seed);
  print_message("max-batch=%u plan=%s\n", how->max_batch, how->plan ? how->plan : "tuned");
  GstHarness *h[STREAMS], *other = shared_harness(40, how);
  pp_model *model = NULL, *other_model = NULL;
  assert_int_equal(pp_model_generate(K, 48, 3, PP_HIDDEN_AUTO, &model), 0);
  assert_int_equal(pp_model_generate(K, 40, 3, PP_HIDDEN_AUTO, &other_model), 0);
  for (int s = 0; s < STREAMS; s++)
    h[s] = shared_harness(48, how);
  static float xs[STREAMS + 1][FRAMES][N * K];
  for (int s = 0; s <= STREAMS; s++)
    for (int i = 0; i < FRAMES; i++)
      test_rng_fill_floats(&rng, xs[s][i], N * K, -2, 2);
  for (int i = 0; i < FRAMES + 2; i++) {
    for (int s = 0; s < STREAMS; s++) {
      if (s == 0 && i >= FRAMES / 2)
        continue;
      if (i < FRAMES)
        push_frame(h[s], xs[s][i], s, i);
      if (i >= 2)
        pull_frame(h[s], model, xs[s][i - 2], s, i - 2);
    }
    if (i < FRAMES)
      push_frame(other, xs[STREAMS][i], STREAMS, i);
    if (i >= 2)
      pull_frame(other, other_model, xs[STREAMS][i - 2], STREAMS, i - 2);
    if (i == 4) {
      for (int s = 0; s < STREAMS; s++)
        assert_int_equal(stat_uint(h[s], "streams"), STREAMS);
      assert_int_equal(stat_uint(other, "streams"), 1);
    }
    if (i == FRAMES / 2 + 1) {
      /* Stream 0 leaves with its frames pulled; the others go on. */
      gst_harness_teardown(h[0]);
      h[0] = NULL;
      assert_int_equal(stat_uint(h[1], "streams"), STREAMS - 1);
    }
  }
  /* Jobs of up to max-batch frames (20 samples a frame stack). */
  GstStructure *stats;
  gdouble mean = 0;
  g_object_get(h[1]->element, "stats", &stats, NULL);
  assert_true(gst_structure_get_double(stats, "batch-mean", &mean));
  const gchar *detail = gst_structure_get_string(stats, "detail");
  print_message("frames a job: %.2f (%s)\n", mean, detail);
  assert_true(mean >= 1.0 && mean <= how->max_batch);
  assert_true((how->max_batch > 1) == (strstr(detail, "batches of up to") != NULL));
  gst_structure_free(stats);
  for (int s = 1; s < STREAMS; s++)
    gst_harness_teardown(h[s]);
  gst_harness_teardown(other);
  pp_model_free(model);
  pp_model_free(other_model);
}

static void
test_streams_share_one_backend(void **state)
{
  (void) state;
  const sharing runs[] = {
    { 1, NULL }, { 4, NULL }, { 4, "kernels=cublas+rowdot" }, { 3, "kernels=split:2+cublas" }
  };
  const bool gpu = g_str_equal(backend_name, "cuda");
  for (size_t i = 0; i < (gpu ? G_N_ELEMENTS(runs) : 2); i++)
    streams_share_one_backend(&runs[i]);
}

/* Not shared: the element's own backend, one stream. */
static void
test_default_is_own_backend(void **state)
{
  (void) state;
  GstElement *e = gst_element_factory_make("cudamlp", NULL);
  gboolean shared = TRUE;
  g_object_get(e, "shared", &shared, NULL);
  assert_false(shared);
  gst_object_unref(e);
}

/* max-batch without shared=true: said at start, and frames run one at a
 * time; with shared=true, nothing said. */
static void
test_max_batch_without_shared_warns(void **state)
{
  (void) state;
  for (int shared = 0; shared < 2; shared++) {
    GstElement *e = test_make_mlp(backend_name, "max-batch", 4, "shared", shared, NULL);
    GstBus *bus = gst_bus_new();
    gst_element_set_bus(e, bus);
    assert_int_not_equal(gst_element_set_state(e, GST_STATE_PAUSED), GST_STATE_CHANGE_FAILURE);
    g_autofree gchar *text = test_bus_text(bus, GST_MESSAGE_WARNING);
    const bool said = text && strstr(text, "max-batch=4 does nothing without shared=true");
    if (said == (bool) shared)
      fail_msg("shared=%d: warnings \"%s\"", shared, text ? text : "");
    gst_element_set_state(e, GST_STATE_NULL);
    gst_bus_set_flushing(bus, TRUE);
    gst_object_unref(e);
    gst_object_unref(bus);
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
    cmocka_unit_test(test_streams_share_one_backend),
    cmocka_unit_test(test_default_is_own_backend),
    cmocka_unit_test(test_max_batch_without_shared_warns),
  };
  return test_gst_run(tests, NULL);
}
