// SPDX-License-Identifier: LGPL-2.1-or-later
/* uringsrc's reads (uringsrcread.h). */
#include "uringsrcread.h"

#include <errno.h>

GST_DEBUG_CATEGORY_EXTERN(gst_uring_src_debug);
#define GST_CAT_DEFAULT gst_uring_src_debug

/* The first failure is posted; the reads in flight behind it fail alike. */
#define READ_ERROR(r, reason, debug_args)                                                          \
  G_STMT_START                                                                                     \
  {                                                                                                \
    if (!(r)->failed) {                                                                            \
      (r)->failed = TRUE;                                                                          \
      GST_ELEMENT_ERROR((r)->src, RESOURCE, READ,                                                  \
                        ("Could not read from file \"%s\": %s.", (r)->file->location, reason),     \
                        debug_args);                                                               \
    }                                                                                              \
  }                                                                                                \
  G_STMT_END

static guint64
align_up(guint64 n, guint a)
{
  return (n + a - 1) / a * a;
}

static void
drop_read(GstUringRead *req)
{
  gst_buffer_unmap(req->buffer, &req->map);
  gst_clear_buffer(&req->buffer);
}

guint
gst_uring_reader_buffer_size(guint block, gboolean direct)
{
  return direct ? (guint) align_up(block, PP_IO_DIRECT_ALIGN) : block;
}

void
gst_uring_reader_start(GstUringReader *r, GstBaseSrc *src, GstPpUringFile *file, guint block,
                       gboolean direct)
{
  *r = (GstUringReader){ .src = src, .file = file, .direct = direct, .block = block };
  r->window = direct ? file->requests.size : 1;
  r->file_size = pp_io_file_size(file->io);
  r->stream = pp_io_is_stream(file->io);
}

void
gst_uring_reader_cancel(GstUringReader *r)
{
  GstUringRead *req;
  while ((req = gst_pp_ring_pop(&r->file->requests))) {
    ssize_t result;
    pp_io_wait(r->file->io, req, &result);
    drop_read(req);
  }
}

gboolean
gst_uring_reader_in_order(const GstUringReader *r, guint64 offset, guint size)
{
  if (r->stream)
    return TRUE; /* a stream is read in order, a block at a time, whatever is asked */
  if (offset != r->expected)
    return FALSE;
  const guint64 left = offset < r->file_size ? r->file_size - offset : 0;
  return size == r->block || (left < r->block && size == left);
}

/* ---- reads ahead ----------------------------------------------------------------- */

static GstFlowReturn
pool_buffer(GstUringReader *r, guint size, GstBuffer **out)
{
  GstBufferPool *pool = gst_base_src_get_buffer_pool(r->src);
  GstFlowReturn flow;
  if (pool) {
    flow = gst_buffer_pool_acquire_buffer(pool, out, NULL);
    gst_object_unref(pool);
  } else {
    GstAllocationParams params;
    gst_allocation_params_init(&params);
    params.align = PP_IO_DIRECT_ALIGN - 1;
    *out = gst_buffer_new_allocate(NULL, size, &params);
    flow = *out ? GST_FLOW_OK : GST_FLOW_ERROR;
  }
  if (flow == GST_FLOW_OK && gst_buffer_get_size(*out) < size) {
    GST_ELEMENT_ERROR(r->src, RESOURCE, FAILED,
                      ("The buffer pool downstream offers buffers of %" G_GSIZE_FORMAT
                       " bytes, too small for reads of %u: a smaller blocksize fits.",
                       gst_buffer_get_size(*out), size),
                      (NULL));
    r->failed = TRUE;
    gst_clear_buffer(out);
    flow = GST_FLOW_ERROR;
  }
  return flow;
}

/* Whether another read may be queued: up to `window` reads of a file ahead
 * of what downstream asked for; one at a time of a stream, whose reads take
 * bytes in the order they run. */
static gboolean
may_read_ahead(const GstUringReader *r)
{
  if (r->stream)
    return r->file->requests.count == 0 && !r->stream_ended;
  return r->file->requests.count < r->window && r->read_pos < r->file_size;
}

/* The read-ahead window follows the file: a read that is done when it is
 * wanted (the page cache answered at submission) gains nothing from others
 * in flight beside it, whose buffers only crowd the CPU's caches; a read
 * still under way (the disk) wants more. So the window doubles, up to
 * queue-depth, each time a read has to be waited for, and shrinks by one
 * after a run of reads that were all ready. */
#define READY_RUN_PER_WINDOW 4

static void
adapt_window(GstUringReader *r, gboolean was_ready)
{
  if (r->direct)
    return; /* O_DIRECT never meets the page cache: the window stays whole */
  if (!was_ready) {
    r->window = MIN(r->window * 2, r->file->requests.size);
    r->ready_run = 0;
  } else if (++r->ready_run >= READY_RUN_PER_WINDOW * r->window && r->window > 1) {
    r->window--;
    r->ready_run = 0;
  }
}

/* Tops the read-ahead up in batches: once a quarter of the window (at
 * least one read) has been taken, the free part is prepared and goes to
 * the kernel in one submission, so three quarters of the window stay in
 * flight while submissions are shared. */
static GstFlowReturn
read_ahead(GstUringReader *r)
{
  if (!r->stream && r->file->requests.count + MAX(r->window / 4, 1) > r->window)
    return GST_FLOW_OK;
  guint prepared = 0;
  while (may_read_ahead(r)) {
    /* O_DIRECT reads past the end come back short. */
    const guint len = gst_uring_reader_buffer_size(
        r->stream ? r->block : (guint) MIN(r->block, r->file_size - r->read_pos), r->direct);
    GstBuffer *buffer;
    const GstFlowReturn flow = pool_buffer(r, len, &buffer);
    if (flow != GST_FLOW_OK)
      return flow;
    r->registered += gst_pp_registrar_add(r->file->registrar, buffer);
    GstUringRead *req = gst_pp_ring_push(&r->file->requests);
    req->buffer = buffer;
    req->offset = r->read_pos;
    gst_buffer_map(buffer, &req->map, GST_MAP_WRITE);
    const int rc = pp_io_submit(r->file->io, req->map.data, len, req->offset, req);
    if (rc < 0) {
      drop_read(req);
      gst_pp_ring_unpush(&r->file->requests);
      READ_ERROR(r, GST_PP_ERRNO_TEXT(rc),
                 ("queuing a read of %u bytes at %" G_GUINT64_FORMAT ": %s", len, r->read_pos,
                  GST_PP_ERRNO_TEXT(rc)));
      return GST_FLOW_ERROR;
    }
    r->read_pos += r->block;
    prepared++;
  }
  const int rc = prepared ? pp_io_flush(r->file->io) : 0;
  if (rc < 0) {
    READ_ERROR(r, GST_PP_ERRNO_TEXT(rc),
               ("submitting %u reads: %s", prepared, GST_PP_ERRNO_TEXT(rc)));
    return GST_FLOW_ERROR;
  }
  return GST_FLOW_OK;
}

GstFlowReturn
gst_uring_reader_next(GstUringReader *r, guint64 offset, GstBuffer **out)
{
  if (r->failed)
    return GST_FLOW_ERROR;
  if (!r->stream && offset >= r->file_size)
    return GST_FLOW_EOS;
  GstFlowReturn flow = read_ahead(r);
  if (flow != GST_FLOW_OK)
    return flow;
  GstUringRead *req = gst_pp_ring_pop(&r->file->requests);
  if (!req) /* a stream whose writer closed */
    return GST_FLOW_EOS;
  if (!r->stream)
    adapt_window(r, pp_io_done(r->file->io, req) == 1);
  ssize_t result;
  pp_io_wait(r->file->io, req, &result);
  GstBuffer *buffer = gst_buffer_ref(req->buffer);
  drop_read(req);
  if (result < 0) {
    gst_buffer_unref(buffer);
    READ_ERROR(r, g_strerror(-result),
               ("read at %" G_GUINT64_FORMAT ": %s", offset, g_strerror(-result)));
    return GST_FLOW_ERROR;
  }
  if (result == 0) { /* the end of the file, or the stream's writer closed */
    r->stream_ended = r->stream;
    gst_buffer_unref(buffer);
    return GST_FLOW_EOS;
  }
  gst_buffer_set_size(buffer, result);
  r->expected = offset + result;
  /* A stream's next read runs while downstream takes this one. */
  if (r->stream && (flow = read_ahead(r)) != GST_FLOW_OK) {
    gst_buffer_unref(buffer);
    return flow;
  }
  *out = buffer;
  return GST_FLOW_OK;
}

/* ---- exact reads ----------------------------------------------------------------- */

GstFlowReturn
gst_uring_reader_exact(GstUringReader *r, guint64 offset, guint size, GstBuffer **out)
{
  if (r->stream)
    return gst_uring_reader_next(r, offset, out);
  if (r->failed)
    return GST_FLOW_ERROR;
  gst_uring_reader_cancel(r);
  if (offset >= r->file_size || size == 0)
    return GST_FLOW_EOS;
  /* O_DIRECT reads whole aligned blocks: the range is read from the block
   * holding its first byte, and the buffer starts `skip` bytes in. */
  const guint want = (guint) MIN((guint64) size, r->file_size - offset);
  const guint64 start = r->direct ? offset / PP_IO_DIRECT_ALIGN * PP_IO_DIRECT_ALIGN : offset;
  const guint skip = (guint) (offset - start);
  const guint len = r->direct ? (guint) align_up(skip + want, PP_IO_DIRECT_ALIGN) : want;
  GstAllocationParams params;
  gst_allocation_params_init(&params);
  params.align = PP_IO_DIRECT_ALIGN - 1;
  GstBuffer *buffer = gst_buffer_new_allocate(NULL, len, &params);
  GstUringRead *req = gst_pp_ring_push(&r->file->requests);
  req->buffer = buffer;
  req->offset = offset;
  req->skip = skip;
  gst_buffer_map(buffer, &req->map, GST_MAP_WRITE);
  int rc = pp_io_submit(r->file->io, req->map.data, len, start, req);
  if (rc == 0)
    rc = pp_io_flush(r->file->io);
  if (rc < 0) {
    gst_uring_reader_cancel(r);
    READ_ERROR(
        r, GST_PP_ERRNO_TEXT(rc),
        ("reading %u bytes at %" G_GUINT64_FORMAT ": %s", want, offset, GST_PP_ERRNO_TEXT(rc)));
    return GST_FLOW_ERROR;
  }
  req = gst_pp_ring_pop(&r->file->requests);
  ssize_t result;
  pp_io_wait(r->file->io, req, &result);
  buffer = gst_buffer_ref(req->buffer);
  drop_read(req);
  if (result < 0) {
    gst_buffer_unref(buffer);
    READ_ERROR(r, g_strerror(-result),
               ("read at %" G_GUINT64_FORMAT ": %s", offset, g_strerror(-result)));
    return GST_FLOW_ERROR;
  }
  const gsize got = (gsize) result > skip ? MIN((gsize) result - skip, want) : 0;
  if (got == 0) { /* the file shrank under us */
    gst_buffer_unref(buffer);
    return GST_FLOW_EOS;
  }
  gst_buffer_resize(buffer, skip, got);
  r->expected = r->read_pos = offset + got;
  *out = buffer;
  return GST_FLOW_OK;
}
