// SPDX-License-Identifier: LGPL-2.1-or-later
/* File reads and writes with several requests in flight, over io_uring
 * (liburing), prepared in batches and submitted together. Each request
 * carries a caller's tag; requests complete in any
 * order and pp_io_wait returns a given one. Short transfers are requeued
 * for the rest, EAGAIN and EINTR resubmitted, and every request is drained
 * before close. Where io_uring is refused (no liburing at build time,
 * ENOSYS, EPERM, io_uring_disabled) or PP_IO_SYNC is asked for, the same
 * calls run pread/pwrite one at a time and pp_io_fallback says why.
 *
 * One thread submits and waits; pp_io_register_buffer/pp_io_forget_buffer
 * may come from any thread. */
#ifndef PP_URING_IO_H
#define PP_URING_IO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct pp_io pp_io;

typedef enum {
  PP_IO_READ,
  PP_IO_WRITE,  /* create or truncate */
  PP_IO_APPEND, /* create or append */
} pp_io_access;

typedef enum {
  PP_IO_AUTO,  /* io_uring, falling back to pread/pwrite where refused */
  PP_IO_URING, /* io_uring or fail */
  PP_IO_SYNC,  /* pread/pwrite */
} pp_io_mode;

typedef struct {
  pp_io_access access;
  pp_io_mode mode;
  unsigned queue_depth; /* requests in flight, 1..PP_IO_MAX_DEPTH */
  bool direct;          /* O_DIRECT: buffers, lengths and offsets PP_IO_DIRECT_ALIGN-aligned */
  /* Every call, registrations included, comes from the thread that opens:
   * the ring then leaves completion work to that thread's waits. */
  bool one_thread;
} pp_io_options;

#define PP_IO_MAX_DEPTH 256
#define PP_IO_DIRECT_ALIGN 4096

/* Opens `path`. Errors are negative errno with a message (the path is the
 * caller's to add): -ENOENT, -EACCES, -EISDIR (a directory is refused),
 * -EINVAL (O_DIRECT refused by the file system). */
int pp_io_open(const char *path, const pp_io_options *opts, pp_io **out, char **msg);

/* Prepares a transfer of `len` bytes at `offset` (PP_IO_READ: into `buf`;
 * writes: from `buf`; offset ignored for PP_IO_APPEND writes, which go after
 * the previous one). -EBUSY when queue_depth requests are in flight.
 * Prepared transfers go to the kernel together, at pp_io_flush or at the
 * next wait: prepare a batch, then flush once. */
int pp_io_submit(pp_io *io, void *buf, size_t len, uint64_t offset, void *tag);
/* Starts every prepared transfer with one system call. */
int pp_io_flush(pp_io *io);

/* Waits until the request tagged `tag` has completed: *result is the bytes
 * transferred (fewer for a read that met the end of the file) or a negative
 * errno. */
int pp_io_wait(pp_io *io, void *tag, ssize_t *result);

/* Whether the request tagged `tag` has completed, without waiting (1 or
 * 0; -ENOENT for no such request); pp_io_wait still collects it. */
int pp_io_done(pp_io *io, void *tag);

unsigned pp_io_in_flight(const pp_io *io);

/* Waits for every request, then fsync()s; returns the first error. */
int pp_io_sync(pp_io *io, char **msg);

/* Waits for every request in flight and closes. */
void pp_io_close(pp_io *io);

/* The size at open; 0 for a stream. */
uint64_t pp_io_file_size(pp_io *io);

/* A FIFO, pipe, character device (or socket): read or written in order at
 * its current position, with no size and no offsets (theirs are ignored);
 * a read is done when it has its length or the writer closed. */
bool pp_io_is_stream(const pp_io *io);
/* NULL when io_uring is in use, else why not. */
const char *pp_io_fallback(const pp_io *io);

/* Registers [base, base+len) with io_uring as a fixed buffer, so transfers
 * inside it skip the per-request page pinning. Returns false where that is
 * impossible (fallback mode, table full, refused); the memory then works as
 * any other. pp_io_forget_buffer must come before the memory is freed. */
bool pp_io_register_buffer(pp_io *io, void *base, size_t len);
void pp_io_forget_buffer(pp_io *io, void *base);
/* Transfers so far that used a registered buffer. */
uint64_t pp_io_fixed_transfers(const pp_io *io);

/* For diagnosing a stuck transfer (tests' watchdog): the ring's submission
 * and completion queue heads and tails, and each request's state. Reads
 * them without locking, so call it only where a stale view does no harm.
 * Free with g_free. */
char *pp_io_describe_state(const pp_io *io);

#endif
