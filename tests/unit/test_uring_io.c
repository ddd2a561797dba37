// SPDX-License-Identifier: LGPL-2.1-or-later
/* src/uring_io: reads and writes with several requests in flight, on files
 * whose size is not a multiple of the request size, with io_uring and with
 * the forced pread/pwrite fallback, buffered and O_DIRECT; errors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "testutil.h"
#include "uring_io.h"
#include "whole_file.h"
#include "watchdog.h"

static uint64_t seed;
static char *dir;

/* The ring the watchdog describes if a test hangs (one CI run once hung in
 * test_writes_and_append under ASan). */
static pp_io *watched;

static char *
describe_watched(void *data)
{
  (void) data;
  return watched ? pp_io_describe_state(watched) : g_strdup("no file open");
}

static int
open_watched(const char *path, const pp_io_options *opts, pp_io **io, char **msg)
{
  const int rc = pp_io_open(path, opts, io, msg);
  if (rc == 0)
    watched = *io;
  return rc;
}

static void
close_watched(pp_io *io)
{
  if (io == watched)
    watched = NULL;
  pp_io_close(io);
}

/* A file of `size` random bytes; returns its contents. */
static uint8_t *
make_file(const char *name, size_t size, char **path)
{
  test_rng rng;
  test_rng_seed(&rng, seed + size);
  uint8_t *data = g_malloc(size ? size : 1);
  test_rng_fill_bytes(&rng, data, size);
  *path = g_build_filename(dir, name, NULL);
  assert_true(g_file_set_contents(*path, (char *) data, size, NULL));
  return data;
}

static void *
aligned(size_t size)
{
  void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  assert_true(p != MAP_FAILED);
  return p;
}

/* Reads the file in `chunk`-byte requests, `depth` in flight, waiting for
 * them newest first, and compares. */
static void
read_back(const char *path, const uint8_t *want, size_t size, size_t chunk, unsigned depth,
          pp_io_mode mode, bool direct)
{
  pp_io_options opts = {
    .access = PP_IO_READ, .mode = mode, .queue_depth = depth, .direct = direct
  };
  pp_io *io = NULL;
  char *msg = NULL;
  const int rc = open_watched(path, &opts, &io, &msg);
  if (rc == -EINVAL && direct) {
    print_message("O_DIRECT refused here (%s): skipped\n", msg);
    g_clear_pointer(&msg, g_free);
    return;
  }
  if (rc < 0)
    fail_msg("open: %s", msg);
  assert_int_equal(pp_io_file_size(io), size);
  assert_int_equal(pp_io_fallback(io) != NULL, mode == PP_IO_SYNC);
  uint8_t *buf = aligned(size + chunk);
  memset(buf, 0xAB, size + chunk);
  size_t offset = 0;
  while (offset < size) {
    unsigned n = 0;
    size_t offsets[PP_IO_MAX_DEPTH];
    for (; n < depth && offset < size; n++, offset += chunk) {
      offsets[n] = offset;
      assert_int_equal(pp_io_submit(io, buf + offset, chunk, offset, GSIZE_TO_POINTER(offset + 1)),
                       0);
    }
    if (n == depth)
      assert_int_equal(pp_io_submit(io, buf, chunk, 0, NULL), -EBUSY);
    while (n--) { /* newest first: completions come in any order */
      ssize_t got;
      assert_int_equal(pp_io_wait(io, GSIZE_TO_POINTER(offsets[n] + 1), &got), 0);
      const size_t expect = MIN(chunk, size - offsets[n]);
      assert_int_equal(got, expect);
    }
  }
  assert_memory_equal(buf, want, size);
  assert_int_equal(pp_io_in_flight(io), 0);
  close_watched(io);
  munmap(buf, size + chunk);
}

static void
test_reads(void **state)
{
  (void) state;
  char *path;
  const size_t size = 3 * 65536 + 12345; /* not a multiple of any chunk */
  uint8_t *want = make_file("reads.bin", size, &path);
  for (unsigned depth = 1; depth <= 32; depth *= 4) {
    read_back(path, want, size, 65536, depth, PP_IO_AUTO, false);
    read_back(path, want, size, 65536, depth, PP_IO_SYNC, false);
    read_back(path, want, size, 4096, depth, PP_IO_AUTO, true);
  }
  g_free(want);
  g_unlink(path);
  g_free(path);
}

static void
test_writes_and_append(void **state)
{
  (void) state;
  g_autofree char *path = g_build_filename(dir, "writes.bin", NULL);
  const size_t chunk = 10000, count = 37;
  test_rng rng;
  test_rng_seed(&rng, seed);
  uint8_t *data = g_malloc(chunk * count);
  test_rng_fill_bytes(&rng, data, chunk * count);
  for (int mode = PP_IO_AUTO; mode <= PP_IO_SYNC; mode += PP_IO_SYNC) {
    pp_io_options opts = { .access = PP_IO_WRITE, .mode = mode, .queue_depth = 8 };
    pp_io *io = NULL;
    char *msg = NULL;
    assert_int_equal(open_watched(path, &opts, &io, &msg), 0);
    for (size_t i = 0; i < count; i++) {
      if (pp_io_in_flight(io) == 8) { /* oldest first, as uringsink does */
        ssize_t got;
        assert_int_equal(pp_io_wait(io, GSIZE_TO_POINTER(i - 8 + 1), &got), 0);
        assert_int_equal(got, chunk);
      }
      assert_int_equal(
          pp_io_submit(io, data + i * chunk, chunk, i * chunk, GSIZE_TO_POINTER(i + 1)), 0);
    }
    assert_int_equal(pp_io_sync(io, &msg), 0);
    close_watched(io);
    gchar *got;
    gsize len;
    assert_true(g_file_get_contents(path, &got, &len, NULL));
    assert_int_equal(len, chunk * count);
    assert_memory_equal(got, data, len);
    g_free(got);
  }
  /* Appends land after what is there, whatever offset is given. */
  pp_io_options opts = { .access = PP_IO_APPEND, .queue_depth = 4 };
  pp_io *io = NULL;
  char *msg = NULL;
  assert_int_equal(open_watched(path, &opts, &io, &msg), 0);
  for (size_t i = 0; i < 4; i++)
    assert_int_equal(pp_io_submit(io, data, 100, 0, GSIZE_TO_POINTER(i + 1)), 0);
  close_watched(io);
  gchar *got;
  gsize len;
  assert_true(g_file_get_contents(path, &got, &len, NULL));
  assert_int_equal(len, chunk * count + 400);
  assert_memory_equal(got + chunk * count + 300, data, 100);
  g_free(got);
  g_free(data);
  g_unlink(path);
}

static void
test_errors(void **state)
{
  (void) state;
  pp_io_options opts = { .access = PP_IO_READ, .queue_depth = 4 };
  pp_io *io = NULL;
  char *msg = NULL;
  assert_int_equal(open_watched("/nonexistent/file", &opts, &io, &msg), -ENOENT);
  g_clear_pointer(&msg, g_free);
  assert_int_equal(open_watched(dir, &opts, &io, &msg), -EISDIR);
  g_clear_pointer(&msg, g_free);
  opts.queue_depth = 0;
  assert_int_equal(open_watched("/dev/null", &opts, &io, &msg), -EINVAL);
  g_clear_pointer(&msg, g_free);

  /* A full device: the write completes with ENOSPC. */
  for (int mode = PP_IO_AUTO; mode <= PP_IO_SYNC; mode += PP_IO_SYNC) {
    pp_io_options w = { .access = PP_IO_APPEND, .mode = mode, .queue_depth = 2 };
    assert_int_equal(open_watched("/dev/full", &w, &io, &msg), 0);
    char byte[64] = { 0 };
    assert_int_equal(pp_io_submit(io, byte, sizeof byte, 0, byte), 0);
    ssize_t got;
    assert_int_equal(pp_io_wait(io, byte, &got), 0);
    assert_int_equal(got, -ENOSPC);
    assert_int_equal(pp_io_wait(io, byte, &got), -ENOENT); /* already collected */
    close_watched(io);
  }

  /* O_DIRECT wants aligned buffers, lengths and offsets. */
  char *path;
  uint8_t *data = make_file("direct.bin", 8192, &path);
  pp_io_options d = { .access = PP_IO_READ, .queue_depth = 2, .direct = true };
  if (open_watched(path, &d, &io, &msg) == 0) {
    uint8_t *buf = aligned(8192);
    assert_int_equal(pp_io_submit(io, buf + 1, 4096, 0, buf), -EINVAL);
    assert_int_equal(pp_io_submit(io, buf, 4095, 0, buf), -EINVAL);
    assert_int_equal(pp_io_submit(io, buf, 4096, 512, buf), -EINVAL);
    close_watched(io);
    munmap(buf, 8192);
  }
  g_clear_pointer(&msg, g_free);
  g_unlink(path);
  g_free(path);
  g_free(data);
}

static void
test_fixed_buffers(void **state)
{
  (void) state;
  char *path;
  const size_t size = 1 << 20;
  uint8_t *want = make_file("fixed.bin", size, &path);
  pp_io_options opts = { .access = PP_IO_READ, .mode = PP_IO_AUTO, .queue_depth = 4 };
  pp_io *io = NULL;
  char *msg = NULL;
  assert_int_equal(open_watched(path, &opts, &io, &msg), 0);
  if (pp_io_fallback(io)) {
    close_watched(io);
    g_unlink(path);
    g_free(path);
    g_free(want);
    skip(); /* no io_uring here, so nothing to register with */
  }
  uint8_t *buf = aligned(size);
  assert_true(pp_io_register_buffer(io, buf, size));
  assert_true(pp_io_register_buffer(io, buf, size)); /* twice is once */
  ssize_t got;
  /* Two reads inside the registered range use it. */
  assert_int_equal(pp_io_submit(io, buf, size / 2, 0, buf), 0);
  assert_int_equal(pp_io_submit(io, buf + size / 2, size / 2, size / 2, buf + 1), 0);
  assert_int_equal(pp_io_wait(io, buf + 1, &got), 0);
  assert_int_equal(pp_io_wait(io, buf, &got), 0);
  assert_memory_equal(buf, want, size);
  assert_int_equal(pp_io_fixed_transfers(io), 2);
  /* Forgotten, the same memory reads as any other. */
  pp_io_forget_buffer(io, buf);
  memset(buf, 0, size);
  assert_int_equal(pp_io_submit(io, buf, size, 0, buf), 0);
  assert_int_equal(pp_io_wait(io, buf, &got), 0);
  assert_int_equal(got, size);
  assert_memory_equal(buf, want, size);
  assert_int_equal(pp_io_fixed_transfers(io), 2);
  close_watched(io);
  munmap(buf, size);
  g_unlink(path);
  g_free(path);
  g_free(want);
}

static void
test_close_drains(void **state)
{
  (void) state;
  char *path;
  const size_t size = 8 << 20;
  uint8_t *want = make_file("drain.bin", size, &path);
  pp_io_options opts = { .access = PP_IO_READ, .queue_depth = 16 };
  pp_io *io = NULL;
  char *msg = NULL;
  assert_int_equal(open_watched(path, &opts, &io, &msg), 0);
  uint8_t *buf = aligned(size);
  for (size_t i = 0; i < 16; i++)
    assert_int_equal(pp_io_submit(io, buf + i * (size / 16), size / 16, i * (size / 16), buf + i),
                     0);
  close_watched(io); /* with 16 reads in flight: waits for them, no leak (ASan) */
  assert_memory_equal(buf, want, size);
  munmap(buf, size);
  g_unlink(path);
  g_free(path);
  g_free(want);
}

static void
test_whole_file(void **state)
{
  (void) state;
  char *path;
  const size_t size = 5 * (1 << 20) + 7; /* several chunks, a ragged end */
  uint8_t *want = make_file("whole.bin", size, &path);
  uint8_t *got = NULL;
  size_t len = 0;
  char *msg = NULL;
  assert_int_equal(pp_read_whole_file(path, &got, &len, &msg), 0);
  assert_int_equal(len, size);
  assert_memory_equal(got, want, size);
  g_free(got);
  assert_int_equal(pp_read_whole_file("/nonexistent", &got, &len, &msg), -ENOENT);
  assert_non_null(strstr(msg, "No such file"));
  g_clear_pointer(&msg, g_free);
  g_unlink(path);
  g_free(path);
  g_free(want);
}

int
main(void)
{
  seed = test_seed();
  /* Not /tmp: it may be tmpfs, which refuses O_DIRECT. */
  dir = g_build_filename(g_getenv("PP_BUILD_ROOT") ? g_getenv("PP_BUILD_ROOT") : ".",
                         "uring-test-XXXXXX", NULL);
  assert_non_null(g_mkdtemp(dir));
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_reads),        cmocka_unit_test(test_writes_and_append),
    cmocka_unit_test(test_errors),       cmocka_unit_test(test_fixed_buffers),
    cmocka_unit_test(test_close_drains), cmocka_unit_test(test_whole_file),
  };
  /* The whole file takes well under a second; meson gives up at 120 s. */
  test_watchdog_start(g_getenv("PP_WATCHDOG_S") ? atoi(g_getenv("PP_WATCHDOG_S")) : 60,
                      describe_watched, NULL);
  const int failed = cmocka_run_group_tests(tests, NULL, NULL);
  test_watchdog_stop();
  g_rmdir(dir);
  g_free(dir);
  return failed;
}
