// SPDX-License-Identifier: LGPL-2.1-or-later
/**
 * SECTION:element-uringsrc
 * @title: uringsrc
 *
 * Reads a file with several io_uring reads in flight (#GstUringSrc:queue-depth),
 * into buffers from the downstream pool: with cudamlp downstream, a frame
 * goes from the disk into pinned memory and on to the GPU without a CPU
 * copy. Pool memory is registered with io_uring as fixed buffers where the
 * kernel allows. Seekable in bytes; EOS at the end of the file, after a last
 * short block. Where io_uring is refused it reads with pread and warns.
 *
 * With #GstUringSrc:caps set to raw video or tensors, each buffer is one
 * frame (a blocksize left at its default becomes the frame size) and gets
 * timestamps from the framerate.
 *
 * ## Example launch line
 * |[
 * gst-launch-1.0 uringsrc location=frames.raw caps="video/x-raw,format=GRAY8,width=1024,height=1024,framerate=30/1" ! cudamlp ! uringsink location=scores.f32
 * ]|
 */
#include "gsturingsrc.h"

#include <errno.h>
#include <gst/video/video.h>

#include "frametime.h"
#include "tensorcaps.h"

GST_DEBUG_CATEGORY_STATIC(gst_uring_src_debug);
#define GST_CAT_DEFAULT gst_uring_src_debug

#define DEFAULT_QUEUE_DEPTH 16
#define DEFAULT_DIRECT FALSE
#define BASESRC_DEFAULT_BLOCKSIZE 4096

enum {
  PROP_DIRECT = GST_PP_URING_PROP_OWN,
  PROP_CAPS,
  PROP_STATS,
};

static GstStaticPadTemplate src_template =
    GST_STATIC_PAD_TEMPLATE("src", GST_PAD_SRC, GST_PAD_ALWAYS, GST_STATIC_CAPS_ANY);

#define gst_uring_src_parent_class parent_class
G_DEFINE_TYPE(GstUringSrc, gst_uring_src, GST_TYPE_BASE_SRC);
GST_ELEMENT_REGISTER_DEFINE(uringsrc, "uringsrc", GST_RANK_NONE, GST_TYPE_URING_SRC);

/* ---- reads in flight ----------------------------------------------------------- */

static void
drop_read(GstUringRead *r)
{
  gst_buffer_unmap(r->buffer, &r->map);
  gst_clear_buffer(&r->buffer);
}

/* Waits for every read in flight and throws the buffers away (a seek, stop). */
static void
cancel_reads(GstUringSrc *self)
{
  GstUringRead *r;
  while ((r = gst_pp_ring_pop(&self->file.requests))) {
    ssize_t result;
    pp_io_wait(self->file.io, r, &result);
    drop_read(r);
  }
}

static guint
align_up(guint n, guint a)
{
  return (n + a - 1) / a * a;
}

static GstFlowReturn
get_buffer(GstUringSrc *self, guint size, GstBuffer **out)
{
  GstBufferPool *pool = gst_base_src_get_buffer_pool(GST_BASE_SRC(self));
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
    GST_ELEMENT_ERROR(self, RESOURCE, FAILED, (NULL),
                      ("Buffers of %" G_GSIZE_FORMAT " bytes cannot take reads of %u",
                       gst_buffer_get_size(*out), size));
    gst_clear_buffer(out);
    flow = GST_FLOW_ERROR;
  }
  return flow;
}

/* Whether another read may be queued: up to `window` reads of a file ahead
 * of what downstream asked for; one at a time of a stream, whose reads take
 * bytes in the order they run. */
static gboolean
may_read_ahead(GstUringSrc *self)
{
  if (self->stream)
    return self->file.requests.count == 0 && !self->stream_ended;
  return self->file.requests.count < self->window && self->read_pos < self->file_size;
}

/* The read-ahead window follows the file: a read that is done when it is
 * wanted (the page cache answered at submission) gains nothing from others
 * in flight beside it, whose buffers only crowd the CPU's caches; a read
 * still under way (the disk) wants more. So the window doubles, up to
 * queue-depth, each time a read has to be waited for, and shrinks by one
 * after a run of reads that were all ready. */
#define READY_RUN_PER_WINDOW 4

static void
adapt_window(GstUringSrc *self, gboolean was_ready)
{
  if (self->direct)
    return; /* O_DIRECT never meets the page cache: the window stays whole */
  if (!was_ready) {
    self->window = MIN(self->window * 2, self->file.requests.size);
    self->ready_run = 0;
  } else if (++self->ready_run >= READY_RUN_PER_WINDOW * self->window && self->window > 1) {
    self->window--;
    self->ready_run = 0;
  }
}

/* Tops the read-ahead up in batches: once a quarter of the window (at
 * least one read) has been taken, the free part is prepared and goes to
 * the kernel in one submission, so three quarters of the window stay in
 * flight while submissions are shared. */
static GstFlowReturn
read_ahead(GstUringSrc *self)
{
  if (!self->stream && self->file.requests.count + MAX(self->window / 4, 1) > self->window)
    return GST_FLOW_OK;
  guint prepared = 0;
  while (may_read_ahead(self)) {
    guint len = self->stream ? self->block : MIN(self->block, self->file_size - self->read_pos);
    if (self->direct)
      len = align_up(len, PP_IO_DIRECT_ALIGN); /* reads past the end come back short */
    GstBuffer *buffer;
    const GstFlowReturn flow = get_buffer(self, len, &buffer);
    if (flow != GST_FLOW_OK)
      return flow;
    self->stat_registered += gst_pp_registrar_add(self->file.registrar, buffer);
    GstUringRead *r = gst_pp_ring_push(&self->file.requests);
    r->buffer = buffer;
    r->offset = self->read_pos;
    gst_buffer_map(buffer, &r->map, GST_MAP_WRITE);
    const int rc = pp_io_submit(self->file.io, r->map.data, len, r->offset, r);
    if (rc < 0) {
      drop_read(r);
      gst_pp_ring_unpush(&self->file.requests);
      GST_ELEMENT_ERROR(self, RESOURCE, READ,
                        ("Could not read from file \"%s\".", self->file.location),
                        ("queuing a read of %u bytes at %" G_GUINT64_FORMAT ": %s", len,
                         self->read_pos, GST_PP_ERRNO_TEXT(rc)));
      return GST_FLOW_ERROR;
    }
    self->read_pos += self->block;
    prepared++;
  }
  const int rc = prepared ? pp_io_flush(self->file.io) : 0;
  if (rc < 0) {
    GST_ELEMENT_ERROR(self, RESOURCE, READ,
                      ("Could not read from file \"%s\".", self->file.location),
                      ("submitting %u reads: %s", prepared, GST_PP_ERRNO_TEXT(rc)));
    return GST_FLOW_ERROR;
  }
  return GST_FLOW_OK;
}

static GstFlowReturn
gst_uring_src_create(GstBaseSrc *bsrc, guint64 offset, guint size, GstBuffer **out)
{
  GstUringSrc *self = GST_URING_SRC(bsrc);
  (void) size; /* reads are `block` bytes; basesrc only clamps the last one */

  if (!self->stream && offset != self->expected) { /* a seek: the read-ahead is for elsewhere */
    cancel_reads(self);
    self->read_pos = offset;
  }
  if (!self->stream && offset >= self->file_size)
    return GST_FLOW_EOS;
  GstFlowReturn flow = read_ahead(self);
  if (flow != GST_FLOW_OK)
    return flow;

  GstUringRead *r = gst_pp_ring_pop(&self->file.requests);
  if (!r) /* a stream whose writer closed */
    return GST_FLOW_EOS;
  if (!self->stream)
    adapt_window(self, pp_io_done(self->file.io, r) == 1);
  ssize_t result;
  pp_io_wait(self->file.io, r, &result);
  GstBuffer *buffer = gst_buffer_ref(r->buffer);
  drop_read(r);
  if (result < 0) {
    gst_buffer_unref(buffer);
    GST_ELEMENT_ERROR(self, RESOURCE, READ,
                      ("Could not read from file \"%s\".", self->file.location),
                      ("read at %" G_GUINT64_FORMAT ": %s", offset, g_strerror(-result)));
    return GST_FLOW_ERROR;
  }
  if (result == 0) { /* the end of the file, or the stream's writer closed */
    self->stream_ended = self->stream;
    gst_buffer_unref(buffer);
    return GST_FLOW_EOS;
  }
  gst_buffer_set_size(buffer, result);
  GST_BUFFER_OFFSET(buffer) = offset;
  GST_BUFFER_OFFSET_END(buffer) = offset + result;
  if (self->timed) {
    const guint64 frame = offset / self->frame_bytes;
    GST_BUFFER_PTS(buffer) = gst_pp_frame_pts(frame, self->fps_n, self->fps_d);
    GST_BUFFER_DURATION(buffer) =
        gst_pp_frame_pts(frame + 1, self->fps_n, self->fps_d) - GST_BUFFER_PTS(buffer);
  }
  self->expected = offset + result;
  self->stat_reads++;
  self->stat_bytes += result;
  /* A stream's next read runs while downstream takes this one. */
  if (self->stream && (flow = read_ahead(self)) != GST_FLOW_OK) {
    gst_buffer_unref(buffer);
    return flow;
  }
  *out = buffer;
  return GST_FLOW_OK;
}

/* ---- caps and allocation ----------------------------------------------------------- */

/* Bytes per frame of fixed raw video or tensor caps, else 0; and their
 * framerate (0/1 where they have none). */
static guint64
frame_size_of(GstCaps *caps, gint *fps_n, gint *fps_d)
{
  pp_frame_layout layout;
  g_autofree gchar *msg = NULL;
  *fps_n = 0;
  *fps_d = 1;
  if (!caps || !gst_caps_is_fixed(caps) ||
      !pp_caps_to_layout(caps, PP_MAPPING_ROWS, 1, PP_COLOR_RGB, &layout, fps_n, fps_d, &msg))
    return 0;
  return layout.frame_bytes;
}

static GstCaps *
gst_uring_src_get_caps(GstBaseSrc *bsrc, GstCaps *filter)
{
  GstUringSrc *self = GST_URING_SRC(bsrc);
  GST_OBJECT_LOCK(self);
  GstCaps *caps = self->caps ? gst_caps_ref(self->caps) : gst_caps_new_any();
  GST_OBJECT_UNLOCK(self);
  if (filter) {
    GstCaps *both = gst_caps_intersect_full(filter, caps, GST_CAPS_INTERSECT_FIRST);
    gst_caps_unref(caps);
    caps = both;
  }
  return caps;
}

static gboolean
gst_uring_src_decide_allocation(GstBaseSrc *bsrc, GstQuery *query)
{
  GstUringSrc *self = GST_URING_SRC(bsrc);
  if (!GST_BASE_SRC_CLASS(parent_class)->decide_allocation(bsrc, query))
    return FALSE;
  /* Keep downstream's pool (pinned memory with cudamlp) if its buffers hold
   * a read; else our own, page-aligned as O_DIRECT wants. */
  const guint need = self->direct ? align_up(self->block, PP_IO_DIRECT_ALIGN) : self->block;
  GstBufferPool *pool = NULL;
  guint size = 0, min = 0, max = 0;
  if (gst_query_get_n_allocation_pools(query) > 0)
    gst_query_parse_nth_allocation_pool(query, 0, &pool, &size, &min, &max);
  if (pool && size >= need) {
    gst_object_unref(pool);
    return TRUE;
  }
  g_clear_object(&pool);
  GST_DEBUG_OBJECT(self, "downstream offers %u-byte buffers; using our own %u-byte pool", size,
                   need);
  pool = gst_buffer_pool_new();
  GstStructure *config = gst_buffer_pool_get_config(pool);
  GstCaps *caps;
  gst_query_parse_allocation(query, &caps, NULL);
  GstAllocationParams params;
  gst_allocation_params_init(&params);
  params.align = PP_IO_DIRECT_ALIGN - 1;
  /* Buffers are made as the read-ahead window needs them, none up front:
   * the pool hands them out in turn, and a page-cached file read through a
   * window of one then cycles two or three buffers that stay in the CPU's
   * caches rather than queue-depth of them that do not. */
  gst_buffer_pool_config_set_params(config, caps, need, 0, 0);
  gst_buffer_pool_config_set_allocator(config, NULL, &params);
  gst_buffer_pool_set_config(pool, config);
  if (gst_query_get_n_allocation_pools(query) > 0)
    gst_query_set_nth_allocation_pool(query, 0, pool, need, 0, 0);
  else
    gst_query_add_allocation_pool(query, pool, need, 0, 0);
  gst_object_unref(pool);
  return TRUE;
}

/* ---- start / stop ---------------------------------------------------------------------- */

static gboolean
gst_uring_src_start(GstBaseSrc *bsrc)
{
  GstUringSrc *self = GST_URING_SRC(bsrc);
  GST_OBJECT_LOCK(self);
  const pp_io_options opts = { .access = PP_IO_READ, .direct = self->direct };
  self->frame_bytes = frame_size_of(self->caps, &self->fps_n, &self->fps_d);
  GST_OBJECT_UNLOCK(self);

  /* A frame per buffer, unless the blocksize was set. */
  self->block = gst_base_src_get_blocksize(bsrc);
  if (self->frame_bytes && self->block == BASESRC_DEFAULT_BLOCKSIZE) {
    self->block = self->frame_bytes;
    gst_base_src_set_blocksize(bsrc, self->block);
  }
  /* Timestamps where each buffer is one frame of a known rate. */
  self->timed = self->frame_bytes && self->block == self->frame_bytes && self->fps_n > 0;
  if (opts.direct && self->block % PP_IO_DIRECT_ALIGN) {
    GST_ELEMENT_ERROR(self, RESOURCE, SETTINGS,
                      ("direct=true needs a blocksize that is a multiple "
                       "of %d bytes, not %u.",
                       PP_IO_DIRECT_ALIGN, self->block),
                      (NULL));
    return FALSE;
  }
  if (!gst_pp_uring_file_open(&self->file, GST_ELEMENT(self), opts, sizeof(GstUringRead)))
    return FALSE;
  self->window = opts.direct ? self->file.requests.size : 1;
  self->ready_run = 0;
  self->file_size = pp_io_file_size(self->file.io);
  self->stream = pp_io_is_stream(self->file.io);
  self->stream_ended = FALSE;
  self->read_pos = self->expected = 0;
  self->stat_reads = self->stat_bytes = self->stat_registered = 0;
  GST_INFO_OBJECT(self, "%s%" G_GUINT64_FORMAT " bytes, %u-byte reads, %u in flight, %s",
                  self->stream ? "a stream, " : "", self->file_size, self->block,
                  self->stream ? 1 : self->file.requests.size,
                  gst_pp_uring_file_io_name(&self->file));
  return TRUE;
}

static gboolean
gst_uring_src_stop(GstBaseSrc *bsrc)
{
  GstUringSrc *self = GST_URING_SRC(bsrc);
  if (self->file.io)
    cancel_reads(self);
  gst_pp_uring_file_close(&self->file);
  return TRUE;
}

static gboolean
gst_uring_src_get_size(GstBaseSrc *bsrc, guint64 *size)
{
  GstUringSrc *self = GST_URING_SRC(bsrc);
  if (!self->file.io || self->stream)
    return FALSE; /* a stream's size is unknown */
  *size = self->file_size;
  return TRUE;
}

static gboolean
gst_uring_src_is_seekable(GstBaseSrc *bsrc)
{
  GstUringSrc *self = GST_URING_SRC(bsrc);
  return self->file.io && !self->stream;
}

/* ---- GObject ------------------------------------------------------------------------- */

static GstStructure *
build_stats(GstUringSrc *self)
{
  return gst_structure_new("application/x-uringsrc-stats", "reads", G_TYPE_UINT64, self->stat_reads,
                           "bytes", G_TYPE_UINT64, self->stat_bytes, "registered-buffers",
                           G_TYPE_UINT64, self->stat_registered, "fixed-reads", G_TYPE_UINT64,
                           self->file.io ? pp_io_fixed_transfers(self->file.io) : 0, "io",
                           G_TYPE_STRING, gst_pp_uring_file_io_name(&self->file), NULL);
}

static void
gst_uring_src_set_property(GObject *object, guint prop_id, const GValue *value, GParamSpec *pspec)
{
  GstUringSrc *self = GST_URING_SRC(object);
  GST_OBJECT_LOCK(self);
  if (gst_pp_uring_file_set_property(&self->file, prop_id, value)) {
    GST_OBJECT_UNLOCK(self);
    return;
  }
  switch (prop_id) {
    case PROP_DIRECT:
      self->direct = g_value_get_boolean(value);
      break;
    case PROP_CAPS:
      gst_caps_replace(&self->caps, (GstCaps *) gst_value_get_caps(value));
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK(self);
}

static void
gst_uring_src_get_property(GObject *object, guint prop_id, GValue *value, GParamSpec *pspec)
{
  GstUringSrc *self = GST_URING_SRC(object);
  GST_OBJECT_LOCK(self);
  if (gst_pp_uring_file_get_property(&self->file, prop_id, value)) {
    GST_OBJECT_UNLOCK(self);
    return;
  }
  switch (prop_id) {
    case PROP_DIRECT:
      g_value_set_boolean(value, self->direct);
      break;
    case PROP_CAPS:
      gst_value_set_caps(value, self->caps);
      break;
    case PROP_STATS:
      g_value_take_boxed(value, build_stats(self));
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK(self);
}

static void
gst_uring_src_finalize(GObject *object)
{
  GstUringSrc *self = GST_URING_SRC(object);
  gst_pp_uring_file_clear(&self->file);
  gst_clear_caps(&self->caps);
  G_OBJECT_CLASS(parent_class)->finalize(object);
}

#define CONFIG_FLAGS (G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY)

static void
gst_uring_src_class_init(GstUringSrcClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS(klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS(klass);
  GstBaseSrcClass *base_class = GST_BASE_SRC_CLASS(klass);

  object_class->set_property = gst_uring_src_set_property;
  object_class->get_property = gst_uring_src_get_property;
  object_class->finalize = gst_uring_src_finalize;

  gst_pp_uring_file_install_properties(
      object_class, "read",
      "Most reads in flight ahead of what downstream has taken: all of them with direct=true; "
      "otherwise as many as the file needs, fewer while the page cache answers at once",
      DEFAULT_QUEUE_DEPTH);
  g_object_class_install_property(
      object_class, PROP_DIRECT,
      g_param_spec_boolean("direct", "Direct I/O",
                           "Open with O_DIRECT, past the page cache (blocksize must be a multiple "
                           "of 4096)",
                           DEFAULT_DIRECT, CONFIG_FLAGS));
  g_object_class_install_property(
      object_class, PROP_CAPS,
      g_param_spec_boxed("caps", "Caps",
                         "Caps of the data (unset: ANY). Raw video or tensor caps make each "
                         "buffer one frame, timestamped from the framerate",
                         GST_TYPE_CAPS, CONFIG_FLAGS));
  g_object_class_install_property(
      object_class, PROP_STATS,
      g_param_spec_boxed("stats", "Statistics",
                         "Reads and bytes delivered, pool buffers registered with io_uring and "
                         "reads into them, and whether io_uring or pread is in use",
                         GST_TYPE_STRUCTURE, G_PARAM_READABLE | G_PARAM_STATIC_STRINGS));

  gst_element_class_add_static_pad_template(element_class, &src_template);
  gst_element_class_set_static_metadata(
      element_class, "io_uring file source", "Source/File",
      "Reads a file with several io_uring reads in flight, into the downstream pool",
      "pingpong developers");
  base_class->start = GST_DEBUG_FUNCPTR(gst_uring_src_start);
  base_class->stop = GST_DEBUG_FUNCPTR(gst_uring_src_stop);
  base_class->create = GST_DEBUG_FUNCPTR(gst_uring_src_create);
  base_class->get_size = GST_DEBUG_FUNCPTR(gst_uring_src_get_size);
  base_class->is_seekable = GST_DEBUG_FUNCPTR(gst_uring_src_is_seekable);
  base_class->get_caps = GST_DEBUG_FUNCPTR(gst_uring_src_get_caps);
  base_class->decide_allocation = GST_DEBUG_FUNCPTR(gst_uring_src_decide_allocation);
  GST_DEBUG_CATEGORY_INIT(gst_uring_src_debug, "uringsrc", 0, "pingpong io_uring file source");
}

static void
gst_uring_src_init(GstUringSrc *self)
{
  gst_pp_uring_file_init(&self->file, DEFAULT_QUEUE_DEPTH);
  self->direct = DEFAULT_DIRECT;
  gst_base_src_set_format(GST_BASE_SRC(self), GST_FORMAT_BYTES);
}
