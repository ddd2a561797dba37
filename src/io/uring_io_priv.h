// SPDX-License-Identifier: LGPL-2.1-or-later
/* What uring_io.c and uring_fixed.c share of a pp_io: its requests and its
 * table of registered buffers. uring_io.c uses uring_fixed.c; not the
 * other way round. */
#ifndef PP_URING_IO_PRIV_H
#define PP_URING_IO_PRIV_H

#include <glib.h>
#include <stdbool.h>
#include <sys/types.h>

#include "uring_io.h"

#ifdef PP_HAVE_URING
#include <liburing.h>
#endif

/* Registered-buffer table size: more than a pool's worth of frames. */
#define FIXED_SLOTS 64
typedef struct {
  bool busy, done;
  void *tag;
  uint8_t *buf;
  size_t len, transferred;
  uint64_t offset;
  ssize_t result;
  int fixed; /* registered-buffer index, or -1 */
} request;

typedef struct {
  uint8_t *base;
  size_t len;
} fixed_range;

struct pp_io {
  int fd;
  pp_io_access access;
  bool direct;
  /* A FIFO, pipe, character device or socket: no size, no offsets; reads
   * take what comes next (read(), or io_uring at offset -1). */
  bool stream;
  uint64_t size;      /* at open; 0 for a stream */
  uint64_t append_at; /* next offset of an append */
  unsigned depth, in_flight;
  request *reqs;
  char *fallback; /* why not io_uring; NULL with it */
#ifdef PP_HAVE_URING
  struct io_uring ring;
  bool ring_ready;
  bool fixed_ready;
  unsigned ring_flags;  /* IORING_SETUP_* the kernel took */
  unsigned unsubmitted; /* entries prepared since the last submission */
  int ring_error;       /* a submission the kernel refused for good */
#endif
  GMutex fixed_lock;
  fixed_range fixed[FIXED_SLOTS];
  uint64_t fixed_transfers;
};

/* Sets up the ring's table of registered buffers, where the kernel has it. */
void pp_io_fixed_start(pp_io *io);
/* The registered buffer [buf, buf+len) lies in, or -1. */
int pp_io_fixed_index(pp_io *io, const uint8_t *buf, size_t len);

#endif
