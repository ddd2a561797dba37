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
 * short block. A reader that pulls ranges (a demuxer, typefind,
 * rawvideoparse) gets exactly the bytes it asks for, as from filesrc. Where
 * io_uring is refused it reads with pread and warns.
 *
 * With #GstUringSrc:caps set to raw video or tensors, each buffer is one
 * frame (a blocksize left at its default becomes the frame size) and gets
 * timestamps from the framerate; a partial frame at the end is dropped with
 * a warning. Caps downstream refuses are an error at start that says which
 * fields do not fit.
 *
 * ## Example launch line
 * |[
 * gst-launch-1.0 uringsrc location=frames.raw caps="video/x-raw,format=GRAY8,width=1024,height=1024,framerate=30/1" ! cudamlp ! uringsink location=scores.f32
 * ]|
 */
#include "gsturingsrc.h"

#include <errno.h>
#include <gst/video/video.h>

#include "capsreason.h"
#include "frametime.h"
#include "tensorcaps.h"

GST_DEBUG_CATEGORY(gst_uring_src_debug);
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

/* ---- reading --------------------------------------------------------------------- */

/* Pushing, the file is read ahead a block at a time; anything else (a
 * demuxer pulling ranges, a seek, a size that is not the blocksize) gets
 * exactly the bytes it asks for. */
static GstFlowReturn
read_range(GstUringSrc *self, guint64 offset, guint size, GstBuffer **out)
{
  GstBaseSrc *bsrc = GST_BASE_SRC(self);
  const gboolean pulled = GST_PAD_MODE(GST_BASE_SRC_PAD(bsrc)) == GST_PAD_MODE_PULL;
  if (!pulled && gst_uring_reader_in_order(&self->reader, offset, size))
    return gst_uring_reader_next(&self->reader, offset, out);
  return gst_uring_reader_exact(&self->reader, offset, size, out);
}

/* Buffers that are frames end at a whole frame: a partial one at the end of
 * the file is dropped, with a warning naming its size, as rawvideoparse
 * does. FALSE when nothing is left of `buffer` (dropped). */
static gboolean
whole_frames(GstUringSrc *self, GstBuffer *buffer)
{
  const gsize size = gst_buffer_get_size(buffer);
  const gsize partial = size % self->frame_bytes;
  if (partial == 0)
    return TRUE;
  GST_ELEMENT_WARNING(self, STREAM, FORMAT,
                      ("\"%s\" ends in a partial frame of %" G_GSIZE_FORMAT
                       " bytes, which is dropped: the caps make a frame %" G_GUINT64_FORMAT
                       " bytes.",
                       self->file.location, partial, self->frame_bytes),
                      ("%" G_GSIZE_FORMAT " bytes at offset %" G_GUINT64_FORMAT, partial,
                       GST_BUFFER_OFFSET(buffer) + size - partial));
  if (size == partial)
    return FALSE;
  gst_buffer_set_size(buffer, size - partial);
  return TRUE;
}

static GstFlowReturn
gst_uring_src_create(GstBaseSrc *bsrc, guint64 offset, guint size, GstBuffer **out)
{
  GstUringSrc *self = GST_URING_SRC(bsrc);
  GstBuffer *buffer = NULL;
  const GstFlowReturn flow = read_range(self, offset, size, &buffer);
  if (flow != GST_FLOW_OK)
    return flow;
  GST_BUFFER_OFFSET(buffer) = offset;
  const gboolean pushed = GST_PAD_MODE(GST_BASE_SRC_PAD(bsrc)) == GST_PAD_MODE_PUSH;
  if (pushed && self->frame_bytes && self->reader.block % self->frame_bytes == 0 &&
      !whole_frames(self, buffer)) {
    gst_buffer_unref(buffer);
    return GST_FLOW_EOS;
  }
  const gsize got = gst_buffer_get_size(buffer);
  GST_BUFFER_OFFSET_END(buffer) = offset + got;
  if (self->timed) {
    const guint64 frame = offset / self->frame_bytes;
    GST_BUFFER_PTS(buffer) = gst_pp_frame_pts(frame, self->fps_n, self->fps_d);
    GST_BUFFER_DURATION(buffer) =
        gst_pp_frame_pts(frame + 1, self->fps_n, self->fps_d) - GST_BUFFER_PTS(buffer);
  }
  self->stat_reads++;
  self->stat_bytes += got;
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

/* The caps property once started (downstream_takes_caps checked them);
 * any caps before, so that linking leaves the refusal to start, which
 * names the caps and why. */
static GstCaps *
gst_uring_src_get_caps(GstBaseSrc *bsrc, GstCaps *filter)
{
  GstUringSrc *self = GST_URING_SRC(bsrc);
  GST_OBJECT_LOCK(self);
  GstCaps *caps = self->caps && self->caps_checked ? gst_caps_ref(self->caps) : gst_caps_new_any();
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
  const guint need = gst_uring_reader_buffer_size(self->reader.block, self->reader.direct);
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

/* Caps set on the element are checked against downstream's here, where a
 * refusal can say which caps and what downstream takes; at link time
 * uringsrc offers any caps, or gst_parse_launch would only say that the
 * two could not be linked. */
static gboolean
downstream_takes_caps(GstUringSrc *self, GstCaps *caps)
{
  GstPad *peer = gst_pad_get_peer(GST_BASE_SRC_PAD(self));
  if (!peer)
    return TRUE; /* not linked: basesrc says so when it pushes */
  GstCaps *takes = gst_pad_query_caps(peer, NULL);
  const gboolean ok = gst_caps_can_intersect(caps, takes);
  if (!ok) {
    g_autofree gchar *ours = gst_caps_to_string(caps), *theirs = gst_caps_to_string(takes);
    g_autofree gchar *why = gst_pp_caps_reason(caps, takes);
    GstElement *next = gst_pad_get_parent_element(peer);
    const gchar *name = next ? GST_OBJECT_NAME(next) : "downstream";
    GST_ELEMENT_ERROR(self, CORE, NEGOTIATION,
                      ("%s does not take the caps set on %s: %s. Set caps it takes, or put a "
                       "converter between them.",
                       name, GST_OBJECT_NAME(self), why),
                      ("%s's caps %s; %s takes %s", GST_OBJECT_NAME(self), ours, name, theirs));
    gst_clear_object(&next);
  }
  gst_caps_unref(takes);
  gst_object_unref(peer);
  return ok;
}

static gboolean
gst_uring_src_start(GstBaseSrc *bsrc)
{
  GstUringSrc *self = GST_URING_SRC(bsrc);
  GST_OBJECT_LOCK(self);
  const pp_io_options opts = { .access = PP_IO_READ, .direct = self->direct };
  self->frame_bytes = frame_size_of(self->caps, &self->fps_n, &self->fps_d);
  GstCaps *caps = self->caps ? gst_caps_ref(self->caps) : NULL;
  GST_OBJECT_UNLOCK(self);
  const gboolean taken = !caps || downstream_takes_caps(self, caps);
  gst_clear_caps(&caps);
  if (!taken)
    return FALSE;

  /* A frame per buffer, unless the blocksize was set. */
  guint block = gst_base_src_get_blocksize(bsrc);
  if (self->frame_bytes && block == BASESRC_DEFAULT_BLOCKSIZE) {
    block = self->frame_bytes;
    gst_base_src_set_blocksize(bsrc, block);
  }
  /* Timestamps where each buffer is one frame of a known rate. */
  self->timed = self->frame_bytes && block == self->frame_bytes && self->fps_n > 0;
  if (opts.direct && block % PP_IO_DIRECT_ALIGN) {
    GST_ELEMENT_ERROR(self, RESOURCE, SETTINGS,
                      ("direct=true needs a blocksize that is a multiple "
                       "of %d bytes, not %u.",
                       PP_IO_DIRECT_ALIGN, block),
                      (NULL));
    return FALSE;
  }
  if (!gst_pp_uring_file_open(&self->file, GST_ELEMENT(self), opts, sizeof(GstUringRead)))
    return FALSE;
  gst_uring_reader_start(&self->reader, bsrc, &self->file, block, opts.direct);
  GST_OBJECT_LOCK(self);
  self->caps_checked = TRUE;
  GST_OBJECT_UNLOCK(self);
  self->stat_reads = self->stat_bytes = 0;
  GST_INFO_OBJECT(self, "%s%" G_GUINT64_FORMAT " bytes, %u-byte reads, %u in flight, %s",
                  self->reader.stream ? "a stream, " : "", self->reader.file_size, block,
                  self->reader.stream ? 1 : self->file.requests.size,
                  gst_pp_uring_file_io_name(&self->file));
  return TRUE;
}

static gboolean
gst_uring_src_stop(GstBaseSrc *bsrc)
{
  GstUringSrc *self = GST_URING_SRC(bsrc);
  GST_OBJECT_LOCK(self);
  self->caps_checked = FALSE;
  GST_OBJECT_UNLOCK(self);
  if (self->file.io)
    gst_uring_reader_cancel(&self->reader);
  gst_pp_uring_file_close(&self->file);
  return TRUE;
}

static gboolean
gst_uring_src_get_size(GstBaseSrc *bsrc, guint64 *size)
{
  GstUringSrc *self = GST_URING_SRC(bsrc);
  if (!self->file.io || self->reader.stream)
    return FALSE; /* a stream's size is unknown */
  *size = self->reader.file_size;
  return TRUE;
}

static gboolean
gst_uring_src_is_seekable(GstBaseSrc *bsrc)
{
  GstUringSrc *self = GST_URING_SRC(bsrc);
  return self->file.io && !self->reader.stream;
}

/* ---- GObject ------------------------------------------------------------------------- */

static GstStructure *
build_stats(GstUringSrc *self)
{
  return gst_structure_new("application/x-uringsrc-stats", "reads", G_TYPE_UINT64, self->stat_reads,
                           "bytes", G_TYPE_UINT64, self->stat_bytes, "registered-buffers",
                           G_TYPE_UINT64, self->reader.registered, "fixed-reads", G_TYPE_UINT64,
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
                         "buffer one frame, timestamped from the framerate, and a partial last "
                         "frame is dropped; checked against what downstream takes at start",
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
