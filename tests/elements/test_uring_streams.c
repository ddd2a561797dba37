// SPDX-License-Identifier: LGPL-2.1-or-later
/* uringsrc and uringsink on streams, the way filesrc and filesink take
 * them: a FIFO, a pipe, stdin and a character device, read at their current
 * position with no size and no seeking until the writer closes. Every case
 * compares the bytes that came through with the bytes sent, through
 * io_uring and through the read()/write() fallback. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <gst/gst.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "piperun.h"
#include "testutil.h"
#include "gstmain.h"

#define SIZE 1000000

static uint64_t seed;
static char *dir;
static uint8_t *data;

static const char *const modes[] = { "io-mode=auto queue-depth=8", "io-mode=sync" };

/* Writes `data` to `fd` in uneven pieces with pauses, so reads come back
 * short and must be continued, then closes it. */
typedef struct {
  int fd;
  const char *path; /* opened for writing here when fd < 0 (a FIFO) */
} writer_args;

static gpointer
writer_main(gpointer p)
{
  writer_args *w = p;
  const int fd = w->fd >= 0 ? w->fd : open(w->path, O_WRONLY);
  assert_true(fd >= 0);
  size_t done = 0, piece = 1;
  while (done < SIZE) {
    const size_t n = MIN(piece, SIZE - done);
    const ssize_t wrote = write(fd, data + done, n);
    assert_true(wrote > 0);
    done += wrote;
    piece = piece * 7 % 100003 + 1;
    if (done % 5 == 0)
      g_usleep(200);
  }
  close(fd);
  return NULL;
}

/* Runs `desc` to EOS; fails on an error. */
static void
run(const char *desc)
{
  g_autofree gchar *error = test_run_pipeline(desc, NULL);
  if (error)
    fail_msg("%s: %s", desc, error);
}

static void
assert_received(const char *path)
{
  gchar *got;
  gsize len;
  assert_true(g_file_get_contents(path, &got, &len, NULL));
  assert_int_equal(len, SIZE);
  assert_memory_equal(got, data, SIZE);
  g_free(got);
  g_unlink(path);
}

static void
test_fifo(void **state)
{
  (void) state;
  g_autofree char *fifo = g_build_filename(dir, "fifo", NULL);
  g_autofree char *out = g_build_filename(dir, "out.bin", NULL);
  assert_int_equal(mkfifo(fifo, 0600), 0);
  for (size_t m = 0; m < G_N_ELEMENTS(modes); m++) {
    writer_args w = { -1, fifo };
    GThread *writer = g_thread_new("fifo-writer", writer_main, &w);
    g_autofree gchar *desc = g_strdup_printf(
        "uringsrc location=%s %s blocksize=65536 ! uringsink location=%s", fifo, modes[m], out);
    run(desc);
    g_thread_join(writer);
    assert_received(out);
  }
  g_unlink(fifo);
}

/* A pipe, read through /dev/fd like a shell's process substitution; and
 * stdin, a pipe put on fd 0. */
static void
test_pipe_and_stdin(void **state)
{
  (void) state;
  g_autofree char *out = g_build_filename(dir, "out.bin", NULL);
  for (int use_stdin = 0; use_stdin < 2; use_stdin++)
    for (size_t m = 0; m < G_N_ELEMENTS(modes); m++) {
      int fds[2];
      assert_int_equal(pipe(fds), 0);
      int saved_stdin = -1, read_fd = fds[0];
      if (use_stdin) {
        saved_stdin = dup(0);
        assert_int_equal(dup2(fds[0], 0), 0);
        close(fds[0]);
        read_fd = 0;
      }
      writer_args w = { fds[1], NULL };
      GThread *writer = g_thread_new("pipe-writer", writer_main, &w);
      g_autofree gchar *location =
          use_stdin ? g_strdup("/dev/stdin") : g_strdup_printf("/dev/fd/%d", read_fd);
      g_autofree gchar *desc = g_strdup_printf("uringsrc location=%s %s ! uringsink location=%s",
                                               location, modes[m], out);
      run(desc);
      g_thread_join(writer);
      assert_received(out);
      if (use_stdin) {
        assert_int_equal(dup2(saved_stdin, 0), 0);
        close(saved_stdin);
      } else {
        close(read_fd);
      }
    }
}

/* uringsink into a pipe, read here. */
static gpointer
reader_main(gpointer p)
{
  const int fd = GPOINTER_TO_INT(p);
  GByteArray *got = g_byte_array_new();
  uint8_t buf[65536];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0)
    g_byte_array_append(got, buf, n);
  close(fd);
  return got;
}

static void
test_sink_into_pipe(void **state)
{
  (void) state;
  g_autofree char *in = g_build_filename(dir, "in.bin", NULL);
  assert_true(g_file_set_contents(in, (const char *) data, SIZE, NULL));
  for (size_t m = 0; m < G_N_ELEMENTS(modes); m++) {
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    GThread *reader = g_thread_new("pipe-reader", reader_main, GINT_TO_POINTER(fds[0]));
    g_autofree gchar *desc = g_strdup_printf(
        "uringsrc location=%s ! uringsink location=/dev/fd/%d %s", in, fds[1], modes[m]);
    run(desc);
    close(fds[1]); /* the sink's own descriptor closed at NULL: the reader sees the end */
    GByteArray *got = g_thread_join(reader);
    assert_int_equal(got->len, SIZE);
    assert_memory_equal(got->data, data, SIZE);
    g_byte_array_unref(got);
  }
  g_unlink(in);
}

/* A character device: /dev/zero never ends, so num-buffers does. */
static void
test_character_device(void **state)
{
  (void) state;
  g_autofree char *out = g_build_filename(dir, "zeros.bin", NULL);
  for (size_t m = 0; m < G_N_ELEMENTS(modes); m++) {
    g_autofree gchar *desc = g_strdup_printf(
        "uringsrc location=/dev/zero num-buffers=10 blocksize=4096 %s ! filesink location=%s",
        modes[m], out);
    run(desc);
    gchar *got;
    gsize len;
    assert_true(g_file_get_contents(out, &got, &len, NULL));
    assert_int_equal(len, 40960);
    for (gsize i = 0; i < len; i++)
      assert_int_equal(got[i], 0);
    g_free(got);
    g_unlink(out);
  }
}

/* A stream has no size and cannot seek; O_DIRECT on one is an error that
 * says so. */
static void
test_not_seekable_and_no_direct(void **state)
{
  (void) state;
  int fds[2];
  assert_int_equal(pipe(fds), 0);
  assert_int_equal(write(fds[1], data, 4096), 4096);
  g_autofree gchar *desc =
      g_strdup_printf("uringsrc name=src location=/dev/fd/%d blocksize=4096 ! fakesink", fds[0]);
  GstElement *pipeline = gst_parse_launch(desc, NULL);
  assert_int_equal(gst_element_set_state(pipeline, GST_STATE_PAUSED), GST_STATE_CHANGE_ASYNC);
  assert_int_equal(gst_element_get_state(pipeline, NULL, NULL, 10 * GST_SECOND),
                   GST_STATE_CHANGE_SUCCESS);
  GstElement *src = gst_bin_get_by_name(GST_BIN(pipeline), "src");
  GstQuery *q = gst_query_new_seeking(GST_FORMAT_BYTES);
  assert_true(gst_element_query(src, q));
  gboolean seekable = TRUE;
  gst_query_parse_seeking(q, NULL, &seekable, NULL, NULL);
  assert_false(seekable);
  gst_query_unref(q);
  gint64 duration = 0;
  assert_false(gst_element_query_duration(src, GST_FORMAT_BYTES, &duration) && duration > 0);
  close(fds[1]); /* the end of the stream, so the task can stop */
  gst_element_set_state(pipeline, GST_STATE_NULL);
  gst_object_unref(src);
  gst_object_unref(pipeline);

  desc = (g_free(desc), g_strdup_printf("uringsrc location=/dev/fd/%d direct=true blocksize=4096 "
                                        "! fakesink",
                                        fds[0]));
  pipeline = gst_parse_launch(desc, NULL);
  GstBus *bus = gst_element_get_bus(pipeline);
  assert_int_equal(gst_element_set_state(pipeline, GST_STATE_PAUSED), GST_STATE_CHANGE_FAILURE);
  GstMessage *msg = gst_bus_pop_filtered(bus, GST_MESSAGE_ERROR);
  assert_non_null(msg);
  GError *e = NULL;
  gchar *debug = NULL;
  gst_message_parse_error(msg, &e, &debug);
  if (!strstr(debug, "O_DIRECT needs a regular file or a block device, not a stream"))
    fail_msg("unexpected error: %s | %s", e->message, debug);
  g_error_free(e);
  g_free(debug);
  gst_message_unref(msg);
  gst_element_set_state(pipeline, GST_STATE_NULL);
  gst_object_unref(bus);
  gst_object_unref(pipeline);
  close(fds[0]);
}

int
main(int argc, char **argv)
{
  gst_init(&argc, &argv);
  seed = test_seed();
  test_rng rng;
  test_rng_seed(&rng, seed);
  data = g_malloc(SIZE);
  test_rng_fill_bytes(&rng, data, SIZE);
  dir = g_build_filename(g_get_tmp_dir(), "uring-streams-XXXXXX", NULL);
  assert_non_null(g_mkdtemp(dir));
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_fifo),
    cmocka_unit_test(test_pipe_and_stdin),
    cmocka_unit_test(test_sink_into_pipe),
    cmocka_unit_test(test_character_device),
    cmocka_unit_test(test_not_seekable_and_no_direct),
  };
  const int failed = cmocka_run_group_tests(tests, NULL, NULL);
  g_rmdir(dir);
  g_free(dir);
  g_free(data);
  return test_gst_finish(failed);
}
