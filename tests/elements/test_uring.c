// SPDX-License-Identifier: LGPL-2.1-or-later
/* uringsrc and uringsink in real pipelines: round trips on files that are
 * not a multiple of the block size, buffered and O_DIRECT, several queue
 * depths, the forced pread/pwrite fallback, seeking, EOS with writes in
 * flight, buffer lists written in one submission, write errors, missing
 * files and directories, state cycles with
 * reads in flight; and uringsrc -> cudamlp -> uringsink, with frames landing
 * in cudamlp's pool memory and results equal to a float64 reference. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <glib/gstdio.h>
#include <gst/app/gstappsrc.h>
#include <gst/gst.h>
#include <string.h>

#include "model.h"
#include "piperun.h"
#include "testutil.h"
#include "gstmain.h"

static uint64_t seed;
static char *dir;
static const char *backend_name = "cpu";

static char *
path_of(const char *name)
{
  return g_build_filename(dir, name, NULL);
}

static uint8_t *
make_file(const char *path, size_t size)
{
  test_rng rng;
  test_rng_seed(&rng, seed + size);
  uint8_t *data = g_malloc(size);
  test_rng_fill_bytes(&rng, data, size);
  assert_true(g_file_set_contents(path, (char *) data, size, NULL));
  return data;
}

static void
assert_same_file(const char *path, const uint8_t *want, size_t size)
{
  gchar *got;
  gsize len;
  assert_true(g_file_get_contents(path, &got, &len, NULL));
  assert_int_equal(len, size);
  assert_memory_equal(got, want, size);
  g_free(got);
}

static void
test_round_trips(void **state)
{
  (void) state;
  g_autofree char *in = path_of("in.bin"), *out = path_of("out.bin");
  const size_t size = 7 * 65536 + 4321; /* 7.07 blocks */
  uint8_t *data = make_file(in, size);
  static const struct {
    const char *src, *sink;
  } cases[] = {
    { "queue-depth=1", "queue-depth=1" },
    { "queue-depth=4", "queue-depth=4" },
    { "queue-depth=32", "queue-depth=32" },
    { "queue-depth=8 direct=true", "queue-depth=8" },
    { "io-mode=sync", "io-mode=sync" },
    { "queue-depth=16 io-mode=uring", "queue-depth=3 io-mode=uring fsync=true" },
  };
  for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
    g_autofree gchar *desc =
        g_strdup_printf("uringsrc location=%s blocksize=65536 %s ! uringsink location=%s %s", in,
                        cases[i].src, out, cases[i].sink);
    g_autofree gchar *error = test_run_pipeline(desc, NULL);
    if (error && strstr(error, "O_DIRECT")) {
      print_message("O_DIRECT refused here: %s\n", error);
      continue;
    }
    if (error)
      fail_msg("%s: %s", desc, error);
    assert_same_file(out, data, size);
    g_unlink(out);
  }
  g_free(data);
  g_unlink(in);
}

static void
test_append_and_eos_with_writes_in_flight(void **state)
{
  (void) state;
  g_autofree char *in = path_of("in2.bin"), *out = path_of("out2.bin");
  const size_t size = 300 * 4096 + 17;
  uint8_t *data = make_file(in, size);
  assert_true(g_file_set_contents(out, "head", 4, NULL));
  /* Small blocks, deep sink queue: EOS arrives with writes in flight and the
   * file must still be whole when the pipeline reports EOS. */
  g_autofree gchar *desc = g_strdup_printf(
      "uringsrc location=%s blocksize=4096 queue-depth=2 ! uringsink location=%s append=true "
      "queue-depth=64",
      in, out);
  g_autofree gchar *error = test_run_pipeline(desc, NULL);
  assert_null(error);
  gchar *got;
  gsize len;
  assert_true(g_file_get_contents(out, &got, &len, NULL));
  assert_int_equal(len, 4 + size);
  assert_memory_equal(got, "head", 4);
  assert_memory_equal(got + 4, data, size);
  g_free(got);
  g_free(data);
  g_unlink(in);
  g_unlink(out);
}

/* Buffer lists of uneven buffers: each list's writes go to the kernel in
 * one submission, and the file holds every byte in order. */
static void
test_buffer_lists(void **state)
{
  (void) state;
  g_autofree char *out = path_of("lists.bin");
  g_autofree gchar *desc =
      g_strdup_printf("appsrc name=in ! uringsink location=%s queue-depth=4", out);
  GstElement *pipeline = gst_parse_launch(desc, NULL);
  assert_non_null(pipeline);
  GstElement *in = gst_bin_get_by_name(GST_BIN(pipeline), "in");
  test_rng rng;
  test_rng_seed(&rng, seed);
  GByteArray *want = g_byte_array_new();
  for (guint l = 0; l < 6; l++) {
    GstBufferList *list = gst_buffer_list_new();
    for (guint b = 0; b < 3 + l; b++) {
      const gsize size = 1 + test_rng_next(&rng) % 20000;
      guint8 *bytes = g_malloc(size);
      test_rng_fill_bytes(&rng, bytes, size);
      g_byte_array_append(want, bytes, size);
      gst_buffer_list_add(list, gst_buffer_new_wrapped(bytes, size));
    }
    assert_int_equal(gst_app_src_push_buffer_list(GST_APP_SRC(in), list), GST_FLOW_OK);
  }
  gst_app_src_end_of_stream(GST_APP_SRC(in));
  GstBus *bus = gst_element_get_bus(pipeline);
  gst_element_set_state(pipeline, GST_STATE_PLAYING);
  GstMessage *msg =
      gst_bus_timed_pop_filtered(bus, 30 * GST_SECOND, GST_MESSAGE_EOS | GST_MESSAGE_ERROR);
  assert_non_null(msg);
  assert_int_equal(GST_MESSAGE_TYPE(msg), GST_MESSAGE_EOS);
  gst_message_unref(msg);
  gst_element_set_state(pipeline, GST_STATE_NULL);
  assert_same_file(out, want->data, want->len);
  g_byte_array_unref(want);
  gst_object_unref(bus);
  gst_object_unref(in);
  gst_object_unref(pipeline);
  g_unlink(out);
}

static void
test_errors(void **state)
{
  (void) state;
  g_autofree char *in = path_of("in3.bin");
  g_free(make_file(in, 100000));
  gchar *error = test_run_pipeline("uringsrc location=/nonexistent/file ! fakesink", NULL);
  assert_non_null(strstr(error, "Could not open file \"/nonexistent/file\" for reading: "));
  assert_non_null(strstr(error, "No such file or directory"));
  g_free(error);
  g_autofree gchar *dir_desc = g_strdup_printf("uringsrc location=%s ! fakesink", dir);
  error = test_run_pipeline(dir_desc, NULL);
  assert_non_null(strstr(error, "is a directory"));
  g_free(error);
  g_autofree gchar *full =
      g_strdup_printf("uringsrc location=%s ! uringsink location=/dev/full", in);
  error = test_run_pipeline(full, NULL);
  assert_non_null(error);
  assert_non_null(strstr(error, "No space left"));
  g_free(error);
  error =
      test_run_pipeline("fakesrc num-buffers=1 ! uringsink location=/nonexistent/dir/out", NULL);
  assert_non_null(strstr(error, "for writing"));
  g_free(error);
  g_autofree gchar *odd =
      g_strdup_printf("uringsrc location=%s blocksize=1000 direct=true ! fakesink", in);
  error = test_run_pipeline(odd, NULL);
  assert_non_null(strstr(error, "multiple of 4096"));
  g_free(error);
  g_unlink(in);
}

static void
test_forced_fallback_reports_pread(void **state)
{
  (void) state;
  g_autofree char *in = path_of("in4.bin");
  g_free(make_file(in, 200000));
  g_autofree gchar *desc =
      g_strdup_printf("uringsrc name=src location=%s io-mode=sync ! fakesink", in);
  GstElement *pipeline = NULL;
  g_autofree gchar *error = test_run_pipeline(desc, &pipeline);
  assert_null(error);
  GstElement *src = gst_bin_get_by_name(GST_BIN(pipeline), "src");
  gst_element_set_state(pipeline, GST_STATE_PAUSED); /* stats live while started */
  GstStructure *stats;
  g_object_get(src, "stats", &stats, NULL);
  assert_string_equal(gst_structure_get_string(stats, "io"), "pread");
  gst_structure_free(stats);
  gst_element_set_state(pipeline, GST_STATE_NULL);
  gst_object_unref(src);
  gst_object_unref(pipeline);
  g_unlink(in);
}

static void
test_seek_in_bytes(void **state)
{
  (void) state;
  g_autofree char *in = path_of("in5.bin");
  const size_t size = 64 * 4096;
  uint8_t *data = make_file(in, size);
  g_autofree gchar *desc =
      g_strdup_printf("uringsrc location=%s blocksize=4096 queue-depth=8 ! fakesink name=sink "
                      "signal-handoffs=false",
                      in);
  GstElement *pipeline = gst_parse_launch(desc, NULL);
  GstElement *sink = gst_bin_get_by_name(GST_BIN(pipeline), "sink");
  gst_element_set_state(pipeline, GST_STATE_PAUSED);
  assert_int_not_equal(gst_element_get_state(pipeline, NULL, NULL, 10 * GST_SECOND),
                       GST_STATE_CHANGE_FAILURE);
  /* Jump to block 40: the read-ahead from block 0 is dropped. */
  assert_true(gst_element_seek_simple(pipeline, GST_FORMAT_BYTES,
                                      GST_SEEK_FLAG_FLUSH | GST_SEEK_FLAG_ACCURATE, 40 * 4096));
  gst_element_get_state(pipeline, NULL, NULL, 10 * GST_SECOND);
  GstSample *sample;
  g_object_get(sink, "last-sample", &sample, NULL);
  GstBuffer *buf = gst_sample_get_buffer(sample);
  assert_int_equal(GST_BUFFER_OFFSET(buf), 40 * 4096);
  GstMapInfo map;
  gst_buffer_map(buf, &map, GST_MAP_READ);
  assert_int_equal(map.size, 4096);
  assert_memory_equal(map.data, data + 40 * 4096, 4096);
  gst_buffer_unmap(buf, &map);
  gst_sample_unref(sample);
  gst_element_set_state(pipeline, GST_STATE_NULL);
  gst_object_unref(sink);
  gst_object_unref(pipeline);
  g_free(data);
  g_unlink(in);
}

static void
test_state_cycles_with_reads_in_flight(void **state)
{
  (void) state;
  g_autofree char *in = path_of("in6.bin");
  g_free(make_file(in, 16 << 20));
  g_autofree gchar *desc = g_strdup_printf(
      "uringsrc location=%s blocksize=65536 queue-depth=16 ! fakesink name=sink sync=false", in);
  GstElement *pipeline = gst_parse_launch(desc, NULL);
  GstElement *sink = gst_bin_get_by_name(GST_BIN(pipeline), "sink");
  GstPad *pad = gst_element_get_static_pad(sink, "sink");
  gint seen = 0;
  gst_pad_add_probe(pad, GST_PAD_PROBE_TYPE_BUFFER, test_count_buffers, &seen, NULL);
  for (int cycle = 0; cycle < 40; cycle++) {
    const gint before = g_atomic_int_get(&seen);
    gst_element_set_state(pipeline, GST_STATE_PLAYING);
    while (g_atomic_int_get(&seen) < before + 2)
      g_usleep(100);
    assert_int_equal(gst_element_set_state(pipeline, GST_STATE_NULL), GST_STATE_CHANGE_SUCCESS);
  }
  gst_object_unref(pad);
  gst_object_unref(sink);
  gst_object_unref(pipeline);
  g_unlink(in);
}

/* ---- through cudamlp ------------------------------------------------------------------ */

typedef struct {
  gint frames;
  gint in_pool; /* buffers whose memory is cudamlp's */
} arrivals;

static GstPadProbeReturn
check_memory(GstPad *pad, GstPadProbeInfo *info, gpointer data)
{
  arrivals *a = data;
  (void) pad;
  GstBuffer *buf = GST_PAD_PROBE_INFO_BUFFER(info);
  g_atomic_int_inc(&a->frames);
  if (gst_buffer_n_memory(buf) == 1 &&
      gst_memory_is_type(gst_buffer_peek_memory(buf, 0), "PingpongPinnedMemory"))
    g_atomic_int_inc(&a->in_pool);
  return GST_PAD_PROBE_OK;
}

static void
test_through_cudamlp(void **state)
{
  (void) state;
  const int width = 96, height = 40, frames = 25, hidden = 32;
  g_autofree char *in = path_of("frames.raw"), *out = path_of("scores.f32");
  uint8_t *pixels = make_file(in, (size_t) width * height * frames);
  g_autofree gchar *desc =
      g_strdup_printf("uringsrc name=src location=%s queue-depth=4 "
                      "caps=\"video/x-raw,format=GRAY8,width=%d,height=%d,framerate=25/1\" ! "
                      "cudamlp name=mlp backend=%s hidden-size=%d ! uringsink location=%s",
                      in, width, height, backend_name, hidden, out);
  GstElement *pipeline = gst_parse_launch(desc, NULL);
  GstElement *mlp = gst_bin_get_by_name(GST_BIN(pipeline), "mlp");
  GstElement *src = gst_bin_get_by_name(GST_BIN(pipeline), "src");
  GstPad *pad = gst_element_get_static_pad(mlp, "sink");
  arrivals a = { 0 };
  gst_pad_add_probe(pad, GST_PAD_PROBE_TYPE_BUFFER, check_memory, &a, NULL);
  GstBus *bus = gst_element_get_bus(pipeline);
  gst_element_set_state(pipeline, GST_STATE_PLAYING);
  GstMessage *msg =
      gst_bus_timed_pop_filtered(bus, 60 * GST_SECOND, GST_MESSAGE_EOS | GST_MESSAGE_ERROR);
  assert_int_equal(GST_MESSAGE_TYPE(msg), GST_MESSAGE_EOS);
  gst_message_unref(msg);
  GstStructure *src_stats, *mlp_stats;
  g_object_get(src, "stats", &src_stats, NULL);
  gst_element_set_state(pipeline, GST_STATE_NULL);
  g_object_get(mlp, "stats", &mlp_stats, NULL);

  /* uringsrc read straight into cudamlp's pool: no copy on the way. */
  assert_int_equal(a.frames, frames);
  assert_int_equal(a.in_pool, frames);
  guint64 staged = 1, registered = 0, fixed = 0;
  gst_structure_get_uint64(mlp_stats, "staged-inputs", &staged);
  assert_int_equal(staged, 0);
  gst_structure_get_uint64(src_stats, "registered-buffers", &registered);
  gst_structure_get_uint64(src_stats, "fixed-reads", &fixed);
  print_message("uringsrc: %s, %" G_GUINT64_FORMAT " pool buffers registered, %" G_GUINT64_FORMAT
                " fixed reads; cudamlp staged %" G_GUINT64_FORMAT " of %d frames\n",
                gst_structure_get_string(src_stats, "io"), registered, fixed, staged, frames);
  if (g_str_equal(gst_structure_get_string(src_stats, "io"), "io_uring"))
    assert_true(registered > 0 && fixed > 0);
  gst_structure_free(src_stats);
  gst_structure_free(mlp_stats);

  /* And the results are the MLP's, frame by frame. */
  gchar *scores;
  gsize len;
  assert_true(g_file_get_contents(out, &scores, &len, NULL));
  assert_int_equal(len, (gsize) frames * height * sizeof(float));
  pp_model *model = NULL;
  assert_int_equal(pp_model_generate(width, hidden, 1, PP_HIDDEN_AUTO, &model), 0);
  float *x = g_new(float, (size_t) width *height);
  double ref[40], mag[40];
  for (int f = 0; f < frames; f++) {
    for (int i = 0; i < width * height; i++)
      x[i] = pixels[(size_t) f * width * height + i] / 255.0f;
    test_reference_mlp(model, x, height, ref, mag);
    const double err = test_scaled_error((float *) scores + (size_t) f * height, ref, mag, height);
    if (!(err <= PP_FP32_REL_TOL))
      fail_msg("frame %d: scaled error %.3e", f, err);
  }
  g_free(x);
  g_free(scores);
  pp_model_free(model);
  gst_object_unref(bus);
  gst_object_unref(pad);
  gst_object_unref(src);
  gst_object_unref(mlp);
  gst_object_unref(pipeline);
  g_free(pixels);
  g_unlink(in);
  g_unlink(out);
}

/* The contrast: frames that come in ordinary memory are staged on CUDA. */
static void
test_staging_is_counted(void **state)
{
  (void) state;
  if (!g_str_equal(backend_name, "cuda"))
    skip(); /* the CPU backend never stages */
  g_autofree char *in = path_of("frames2.raw");
  g_free(make_file(in, 64 * 32 * 10));
  g_autofree gchar *desc =
      g_strdup_printf("filesrc location=%s ! rawvideoparse format=gray8 width=64 height=32 ! "
                      "cudamlp name=mlp backend=cuda ! fakesink",
                      in);
  GstElement *pipeline = NULL;
  g_autofree gchar *error = test_run_pipeline(desc, &pipeline);
  assert_null(error);
  GstElement *mlp = gst_bin_get_by_name(GST_BIN(pipeline), "mlp");
  assert_int_equal(test_stat_u64(mlp, "staged-inputs"), 10);
  gst_object_unref(mlp);
  gst_object_unref(pipeline);
  g_unlink(in);
}

int
main(int argc, char **argv)
{
  gst_init(&argc, &argv);
  seed = test_seed();
  if (!test_gst_backend(&backend_name))
    return 77;
  /* Not /tmp: it may be tmpfs, which refuses O_DIRECT. */
  dir = g_build_filename(g_getenv("PP_BUILD_ROOT") ? g_getenv("PP_BUILD_ROOT") : ".",
                         "uring-element-XXXXXX", NULL);
  assert_non_null(g_mkdtemp(dir));
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_round_trips),
    cmocka_unit_test(test_append_and_eos_with_writes_in_flight),
    cmocka_unit_test(test_buffer_lists),
    cmocka_unit_test(test_errors),
    cmocka_unit_test(test_forced_fallback_reports_pread),
    cmocka_unit_test(test_seek_in_bytes),
    cmocka_unit_test(test_state_cycles_with_reads_in_flight),
    cmocka_unit_test(test_through_cudamlp),
    cmocka_unit_test(test_staging_is_counted),
  };
  const int failed = cmocka_run_group_tests(tests, NULL, NULL);
  g_rmdir(dir);
  g_free(dir);
  return test_gst_finish(failed);
}
