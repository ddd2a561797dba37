// SPDX-License-Identifier: LGPL-2.1-or-later
/* File I/O over io_uring, prepared in batches, with a pread/pwrite fallback. */
#include "uring_io.h"

#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "error.h"
#include "uring_io_priv.h"

/* Longest single wait for a completion before looking again (see reap). */
#define WAIT_SLICE_S 1

/* A refusal with the system's reason after what failed. */
#define fail(msg, err, what) pp_error(msg, err, "%s: %s", what, g_strerror(err))

/* ---- open / close ---------------------------------------------------------- */

static int
open_file(pp_io *io, const char *path, char **msg)
{
  int flags = O_CLOEXEC | (io->direct ? O_DIRECT : 0);
  flags |= io->access == PP_IO_READ    ? O_RDONLY
           : io->access == PP_IO_WRITE ? O_WRONLY | O_CREAT | O_TRUNC
                                       : O_WRONLY | O_CREAT;
  struct stat st;
  /* O_DIRECT on a pipe fails open() with a bare EINVAL: say why first. */
  if (io->direct && stat(path, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode) &&
      !S_ISDIR(st.st_mode))
    return fail(msg, EINVAL, "O_DIRECT needs a regular file or a block device, not a stream");
  io->fd = open(path, flags, 0666);
  if (io->fd < 0) {
    const int err = errno;
    if (err == EINVAL && io->direct)
      return fail(msg, err, "the file system refuses O_DIRECT");
    return fail(msg, err, "cannot open");
  }
  if (fstat(io->fd, &st) < 0)
    return fail(msg, errno, "cannot stat");
  if (S_ISDIR(st.st_mode))
    return fail(msg, EISDIR, "cannot read");
  io->stream = !S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode);
  if (io->stream && io->direct)
    return fail(msg, EINVAL, "O_DIRECT needs a regular file or a block device, not a stream");
  io->size = io->stream ? 0 : (uint64_t) st.st_size;
  io->append_at = io->access == PP_IO_APPEND ? io->size : 0;
  return 0;
}

#ifdef PP_HAVE_URING
/* The ring's set-up flags, most wanted first, down to none for kernels
 * that have none of them. Completion work runs when the thread next enters
 * the kernel rather than by interrupting it (COOP_TASKRUN); a ring used
 * from one thread only may also defer it to that thread's waits
 * (SINGLE_ISSUER | DEFER_TASKRUN), which the kernel refuses to any other
 * thread, registrations included. */
static int
start_ring(pp_io *io, bool one_thread)
{
  const unsigned one_thread_flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN;
  const unsigned tries[] = { one_thread ? one_thread_flags : IORING_SETUP_COOP_TASKRUN,
                             IORING_SETUP_COOP_TASKRUN, 0 };
  int rc = -EINVAL;
  for (unsigned i = 0; i < G_N_ELEMENTS(tries) && rc == -EINVAL; i++) {
    rc = io_uring_queue_init(io->depth, &io->ring, tries[i]);
    io->ring_flags = tries[i];
  }
  if (rc < 0)
    return rc;
  io->ring_ready = true;
  pp_io_fixed_start(io);
  return 0;
}
#endif

int
pp_io_open(const char *path, const pp_io_options *opts, pp_io **out, char **msg)
{
  if (opts->queue_depth < 1 || opts->queue_depth > PP_IO_MAX_DEPTH) {
    if (msg)
      *msg = g_strdup_printf("queue depth must be 1..%d", PP_IO_MAX_DEPTH);
    return -EINVAL;
  }
  pp_io *io = g_new0(pp_io, 1);
  io->fd = -1;
  io->access = opts->access;
  io->direct = opts->direct;
  io->depth = opts->queue_depth;
  io->reqs = g_new0(request, io->depth);
  g_mutex_init(&io->fixed_lock);
  int rc = open_file(io, path, msg);
#ifdef PP_HAVE_URING
  if (rc == 0 && opts->mode != PP_IO_SYNC) {
    const int ring_rc = start_ring(io, opts->one_thread);
    if (ring_rc < 0 && opts->mode == PP_IO_URING)
      rc = fail(msg, -ring_rc, "io_uring refused");
    else if (ring_rc < 0)
      io->fallback = g_strdup_printf("io_uring refused (%s)", g_strerror(-ring_rc));
  }
#else
  if (rc == 0 && opts->mode == PP_IO_URING)
    rc = fail(msg, ENOTSUP, "this build has no io_uring (liburing was missing)");
  else if (opts->mode != PP_IO_SYNC)
    io->fallback = g_strdup("this build has no io_uring (liburing was missing)");
#endif
  if (rc == 0 && opts->mode == PP_IO_SYNC)
    io->fallback = g_strdup("pread/pwrite asked for");
  if (rc < 0) {
    pp_io_close(io);
    return rc;
  }
  *out = io;
  return 0;
}

static int reap(pp_io *io);

void
pp_io_close(pp_io *io)
{
  if (!io)
    return;
  for (unsigned i = 0; i < io->depth; i++)
    while (io->reqs[i].busy && !io->reqs[i].done)
      if (reap(io) < 0)
        break;
#ifdef PP_HAVE_URING
  if (io->ring_ready)
    io_uring_queue_exit(&io->ring);
#endif
  if (io->fd >= 0)
    close(io->fd);
  g_mutex_clear(&io->fixed_lock);
  g_free(io->reqs);
  g_free(io->fallback);
  g_free(io);
}

/* ---- transfers -------------------------------------------------------------- */

static void
complete(pp_io *io, request *r, ssize_t result)
{
  r->done = true;
  r->result = result;
  if (r->fixed >= 0 && result > 0)
    io->fixed_transfers++;
}

/* pread/pwrite of what is left of `r`, retrying EINTR/EAGAIN and short
 * transfers, up to the end of the file for reads. */
static void
transfer_sync(pp_io *io, request *r)
{
  while (r->transferred < r->len) {
    uint8_t *p = r->buf + r->transferred;
    const size_t n = r->len - r->transferred;
    const off_t off = r->offset + r->transferred;
    ssize_t got;
    if (io->stream)
      got = io->access == PP_IO_READ ? read(io->fd, p, n) : write(io->fd, p, n);
    else
      got = io->access == PP_IO_READ ? pread(io->fd, p, n, off) : pwrite(io->fd, p, n, off);
    if (got < 0 && (errno == EINTR || errno == EAGAIN))
      continue;
    if (got < 0) {
      complete(io, r, -errno);
      return;
    }
    if (got == 0) /* end of file */
      break;
    r->transferred += got;
    if (io->direct && r->transferred % PP_IO_DIRECT_ALIGN)
      break; /* an O_DIRECT read short of a block met the end of the file */
  }
  complete(io, r, r->transferred);
}

#ifdef PP_HAVE_URING
/* Hands every prepared entry to the kernel in one call. -EAGAIN or -EBUSY
 * when it cannot take them now (they stay prepared, for after a
 * completion); any other refusal fails the ring for good. */
static int
submit_prepared(pp_io *io)
{
  if (io->ring_error)
    return io->ring_error;
  while (io->unsubmitted > 0) {
    const int rc = io_uring_submit(&io->ring);
    if (rc == -EINTR)
      continue;
    if (rc == -EAGAIN || rc == -EBUSY)
      return rc;
    if (rc <= 0) {
      /* The prepared entries never reach the kernel: the ring is not
       * entered again, so their buffers may go. */
      io->ring_error = rc < 0 ? rc : -EIO;
      return io->ring_error;
    }
    io->unsubmitted -= MIN((unsigned) rc, io->unsubmitted);
  }
  return 0;
}

/* Prepares what is left of `r`; submit_prepared sends it. */
static int
queue_request(pp_io *io, request *r)
{
  struct io_uring_sqe *sqe = io_uring_get_sqe(&io->ring);
  if (!sqe) {
    const int rc = submit_prepared(io);
    if (rc < 0)
      return rc;
    sqe = io_uring_get_sqe(&io->ring);
    if (!sqe)
      return -EBUSY;
  }
  uint8_t *p = r->buf + r->transferred;
  const unsigned n = r->len - r->transferred;
  /* -1: the file's current position, all a stream has. */
  const uint64_t off = io->stream ? (uint64_t) -1 : r->offset + r->transferred;
  if (io->access == PP_IO_READ) {
    if (r->fixed >= 0)
      io_uring_prep_read_fixed(sqe, io->fd, p, n, off, r->fixed);
    else
      io_uring_prep_read(sqe, io->fd, p, n, off);
  } else {
    if (r->fixed >= 0)
      io_uring_prep_write_fixed(sqe, io->fd, p, n, off, r->fixed);
    else
      io_uring_prep_write(sqe, io->fd, p, n, off);
  }
  io_uring_sqe_set_data64(sqe, r - io->reqs);
  io->unsubmitted++;
  return 0;
}

/* One completion: the request is done, or requeued for the rest (a short
 * transfer) or again (EAGAIN, EINTR). */
static void
handle_completion(pp_io *io, uint64_t index, int res)
{
  request *r = &io->reqs[index];
  if (res < 0 && res != -EAGAIN && res != -EINTR) {
    complete(io, r, res);
    return;
  }
  if (res > 0)
    r->transferred += res;
  const bool at_end =
      res == 0 || (io->direct && io->access == PP_IO_READ && r->transferred % PP_IO_DIRECT_ALIGN);
  if (r->transferred == r->len || at_end) {
    complete(io, r, r->transferred);
    return;
  }
  const int requeue = queue_request(io, r);
  if (requeue < 0)
    complete(io, r, requeue);
}

/* Every request still waiting fails with the ring's error. */
static void
fail_waiting(pp_io *io)
{
  for (unsigned i = 0; i < io->depth; i++)
    if (io->reqs[i].busy && !io->reqs[i].done)
      complete(io, &io->reqs[i], io->ring_error);
}
#endif

#ifdef PP_HAVE_URING
/* Handles every completion the ring holds now, without waiting. */
static void
handle_ready(pp_io *io)
{
  struct io_uring_cqe *cqe;
  unsigned head, seen = 0;
  io_uring_for_each_cqe(&io->ring, head, cqe)
  {
    handle_completion(io, io_uring_cqe_get_data64(cqe), cqe->res);
    seen++;
  }
  io_uring_cq_advance(&io->ring, seen);
}
#endif

/* Submits what is prepared, waits for at least one completion, and handles
 * every completion there is. */
static int
reap(pp_io *io)
{
#ifdef PP_HAVE_URING
  if (io->ring_ready) {
    const int submitted = submit_prepared(io);
    if (submitted < 0 && submitted != -EAGAIN && submitted != -EBUSY) {
      fail_waiting(io);
      return 0;
    }
    struct io_uring_cqe *cqe;
    /* Waits in slices where the kernel takes a timeout with the wait itself
     * (IORING_FEAT_EXT_ARG; older kernels would need a timeout request in the
     * ring): each slice enters the kernel again, which runs pending task work
     * and looks at the completion queue afresh, so a completion whose wake-up
     * went astray is still seen. */
    struct __kernel_timespec slice = { .tv_sec = WAIT_SLICE_S };
    const int rc = io->ring.features & IORING_FEAT_EXT_ARG
                       ? io_uring_wait_cqe_timeout(&io->ring, &cqe, &slice)
                       : io_uring_wait_cqe(&io->ring, &cqe);
    if (rc == -EINTR || rc == -ETIME)
      return 0;
    if (rc < 0)
      return rc;
    handle_ready(io);
    return 0;
  }
#endif
  (void) io;
  return -EINVAL; /* synchronous requests are done when submitted */
}

int
pp_io_submit(pp_io *io, void *buf, size_t len, uint64_t offset, void *tag)
{
  if (io->in_flight == io->depth)
    return -EBUSY;
  if (io->access == PP_IO_APPEND) {
    offset = io->append_at;
    io->append_at += len;
  }
  if (io->direct && (((uintptr_t) buf | len | offset) % PP_IO_DIRECT_ALIGN) != 0)
    return -EINVAL;
  request *r = NULL;
  for (unsigned i = 0; i < io->depth && !r; i++)
    if (!io->reqs[i].busy)
      r = &io->reqs[i];
  *r = (request){ .busy = true, .tag = tag, .buf = buf, .len = len, .offset = offset, .fixed = -1 };
  io->in_flight++;
#ifdef PP_HAVE_URING
  if (io->ring_ready) {
    r->fixed = pp_io_fixed_index(io, buf, len);
    const int rc = io->ring_error ? io->ring_error : queue_request(io, r);
    if (rc < 0) {
      r->busy = false;
      io->in_flight--;
    }
    return rc;
  }
#endif
  transfer_sync(io, r);
  return 0;
}

int
pp_io_flush(pp_io *io)
{
#ifdef PP_HAVE_URING
  if (io->ring_ready) {
    const int rc = submit_prepared(io);
    /* The kernel is short of room now: the entries go with the next wait. */
    return rc == -EAGAIN || rc == -EBUSY ? 0 : rc;
  }
#endif
  (void) io;
  return 0;
}

static request *
find_request(pp_io *io, void *tag)
{
  for (unsigned i = 0; i < io->depth; i++)
    if (io->reqs[i].busy && io->reqs[i].tag == tag)
      return &io->reqs[i];
  return NULL;
}

int
pp_io_done(pp_io *io, void *tag)
{
  request *r = find_request(io, tag);
  if (!r)
    return -ENOENT;
#ifdef PP_HAVE_URING
  if (io->ring_ready && !r->done) {
    const int rc = submit_prepared(io);
    if (rc < 0 && rc != -EAGAIN && rc != -EBUSY)
      fail_waiting(io);
    else
      handle_ready(io);
  }
#endif
  return r->done;
}

int
pp_io_wait(pp_io *io, void *tag, ssize_t *result)
{
  request *r = find_request(io, tag);
  if (!r)
    return -ENOENT;
  while (!r->done) {
    const int rc = reap(io);
    if (rc < 0)
      complete(io, r, rc); /* the ring itself failed: give up on this one */
  }
  *result = r->result;
  r->busy = r->done = false;
  io->in_flight--;
  return 0;
}

unsigned
pp_io_in_flight(const pp_io *io)
{
  return io->in_flight;
}

int
pp_io_sync(pp_io *io, char **msg)
{
  int first_error = 0;
  for (unsigned i = 0; i < io->depth; i++) {
    if (!io->reqs[i].busy)
      continue;
    ssize_t result;
    pp_io_wait(io, io->reqs[i].tag, &result);
    if (result < 0 && !first_error)
      first_error = result;
  }
  if (first_error < 0)
    return fail(msg, -first_error, "a transfer failed");
  if (io->access != PP_IO_READ && !io->stream && fsync(io->fd) < 0) /* a pipe has no disk */
    return fail(msg, errno, "fsync failed");
  return 0;
}

uint64_t
pp_io_file_size(pp_io *io)
{
  return io->size;
}

bool
pp_io_is_stream(const pp_io *io)
{
  return io->stream;
}

const char *
pp_io_fallback(const pp_io *io)
{
  return io->fallback;
}

char *
pp_io_describe_state(const pp_io *io)
{
  GString *s = g_string_new(NULL);
  g_string_append_printf(s, "fd %d, %s, depth %u, in flight %u", io->fd,
                         io->fallback ? io->fallback : "io_uring", io->depth, io->in_flight);
#ifdef PP_HAVE_URING
  if (io->ring_ready) {
    g_string_append_printf(s, ", ring flags 0x%x, %u prepared, error %d", io->ring_flags,
                           io->unsubmitted, io->ring_error);
    const struct io_uring_sq *sq = &io->ring.sq;
    const struct io_uring_cq *cq = &io->ring.cq;
    g_string_append_printf(
        s,
        "\n  SQ: kernel head %u, kernel tail %u, ours %u..%u, flags 0x%x, "
        "dropped %u\n  CQ: kernel head %u, kernel tail %u, overflow %u",
        __atomic_load_n(sq->khead, __ATOMIC_ACQUIRE), __atomic_load_n(sq->ktail, __ATOMIC_ACQUIRE),
        sq->sqe_head, sq->sqe_tail, __atomic_load_n(sq->kflags, __ATOMIC_ACQUIRE),
        __atomic_load_n(sq->kdropped, __ATOMIC_ACQUIRE),
        __atomic_load_n(cq->khead, __ATOMIC_ACQUIRE), __atomic_load_n(cq->ktail, __ATOMIC_ACQUIRE),
        __atomic_load_n(cq->koverflow, __ATOMIC_ACQUIRE));
  }
#endif
  for (unsigned i = 0; i < io->depth; i++) {
    const request *r = &io->reqs[i];
    if (r->busy)
      g_string_append_printf(s,
                             "\n  request %u: tag %p, %s, %zu of %zu bytes at %" G_GUINT64_FORMAT
                             ", result %zd, fixed %d",
                             i, r->tag, r->done ? "done" : "pending", r->transferred, r->len,
                             r->offset, r->result, r->fixed);
  }
  return g_string_free(s, FALSE);
}
