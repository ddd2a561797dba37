// SPDX-License-Identifier: LGPL-2.1-or-later
/* pp_read_whole_file: the file in chunks, a few reads in flight at once
 * through uring_io from the one calling thread. */
#include "whole_file.h"

#include <errno.h>
#include <glib.h>
#include <sys/stat.h>

#include "uring_io.h"

#define WHOLE_FILE_CHUNK (1u << 20)
#define WHOLE_FILE_DEPTH 4

/* What a file that is not a regular one is, for messages. */
static const char *
file_kind(mode_t mode)
{
  return S_ISDIR(mode)    ? "a directory"
         : S_ISFIFO(mode) ? "a FIFO"
         : S_ISCHR(mode)  ? "a character device"
         : S_ISBLK(mode)  ? "a block device"
         : S_ISSOCK(mode) ? "a socket"
                          : "not a regular file";
}

int
pp_read_whole_file(const char *path, uint8_t **bytes, size_t *len, char **msg)
{
  /* Opening a FIFO for reading blocks until a writer comes: refuse what is
   * not a regular file before opening it. */
  struct stat st;
  if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
    if (msg)
      *msg = g_strdup_printf("is %s, not a regular file", file_kind(st.st_mode));
    return S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
  }
  const pp_io_options opts = { .access = PP_IO_READ,
                               .queue_depth = WHOLE_FILE_DEPTH,
                               .one_thread = true };
  pp_io *io = NULL;
  int rc = pp_io_open(path, &opts, &io, msg);
  if (rc < 0)
    return rc;
  const uint64_t size = pp_io_file_size(io);
  uint8_t *buf = g_malloc(size ? size : 1);
  uint64_t queued = 0, done = 0;
  /* Chunks are tagged with their offset + 1, and waited for in order. */
  while (rc == 0 && done < size) {
    while (queued < size && pp_io_in_flight(io) < WHOLE_FILE_DEPTH) {
      const size_t n = MIN(WHOLE_FILE_CHUNK, size - queued);
      rc = pp_io_submit(io, buf + queued, n, queued, GSIZE_TO_POINTER(queued + 1));
      if (rc < 0)
        break;
      queued += n;
    }
    if (rc == 0)
      rc = pp_io_flush(io);
    ssize_t got;
    if (rc == 0 && pp_io_wait(io, GSIZE_TO_POINTER(done + 1), &got) == 0) {
      const size_t want = MIN(WHOLE_FILE_CHUNK, size - done);
      if (got < 0)
        rc = (int) got;
      else if ((size_t) got < want)
        rc = -EIO; /* the file shrank while being read */
      done += want;
    }
  }
  pp_io_close(io);
  if (rc < 0) {
    g_free(buf);
    if (msg && !*msg)
      *msg = g_strdup_printf("read failed: %s", g_strerror(-rc));
    return rc;
  }
  *bytes = buf;
  *len = size;
  return 0;
}
