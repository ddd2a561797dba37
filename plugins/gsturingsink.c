// SPDX-License-Identifier: LGPL-2.1-or-later
/**
 * SECTION:element-uringsink
 * @title: uringsink
 *
 * Writes buffers to a file with several io_uring writes in flight
 * (#GstUringSink:queue-depth), straight from the buffers (held until their
 * write completes), at consecutive offsets, so the file comes out in order.
 * Writes are acknowledged in order: when one fails, every write before it is
 * on disk. EOS and stopping wait for every write, and with
 * #GstUringSink:fsync for the disk. Where io_uring is refused it writes with
 * pwrite and warns.
 *
 * ## Example launch line
 * |[
 * gst-launch-1.0 videotestsrc num-buffers=100 ! video/x-raw,format=GRAY8,width=640,height=480 ! uringsink location=frames.raw
 * ]|
 */
#include "gsturingsink.h"

#include <errno.h>

GST_DEBUG_CATEGORY_STATIC(gst_uring_sink_debug);
#define GST_CAT_DEFAULT gst_uring_sink_debug

#define DEFAULT_QUEUE_DEPTH 8
#define DEFAULT_APPEND FALSE
#define DEFAULT_FSYNC FALSE

enum {
  PROP_APPEND = GST_PP_URING_PROP_OWN,
  PROP_FSYNC,
  PROP_STATS,
};

static GstStaticPadTemplate sink_template =
    GST_STATIC_PAD_TEMPLATE("sink", GST_PAD_SINK, GST_PAD_ALWAYS, GST_STATIC_CAPS_ANY);

#define gst_uring_sink_parent_class parent_class
G_DEFINE_TYPE(GstUringSink, gst_uring_sink, GST_TYPE_BASE_SINK);
GST_ELEMENT_REGISTER_DEFINE(uringsink, "uringsink", GST_RANK_NONE, GST_TYPE_URING_SINK);

/* The first failure of a run is posted; the writes in flight behind it
 * fail the same way and are not. */
static void
post_write_error(GstUringSink *self, int err)
{
  if (self->failed)
    return;
  self->failed = TRUE;
  if (err == ENOSPC)
    GST_ELEMENT_ERROR(self, RESOURCE, NO_SPACE_LEFT,
                      ("No space left to write \"%s\": free some on its filesystem, or write "
                       "elsewhere.",
                       self->file.location),
                      ("writing to \"%s\": %s", self->file.location, g_strerror(err)));
  else
    GST_ELEMENT_ERROR(
        self, RESOURCE, WRITE,
        ("Error while writing to file \"%s\": %s.", self->file.location, g_strerror(err)),
        ("%s", g_strerror(err)));
}

/* Waits for the oldest write in flight and lets its buffer go. */
static GstFlowReturn
complete_oldest(GstUringSink *self)
{
  GstUringWrite *w = gst_pp_ring_pop(&self->file.requests);
  ssize_t result;
  pp_io_wait(self->file.io, w, &result);
  const gsize want = w->map.size;
  gst_buffer_unmap(w->buffer, &w->map);
  gst_clear_buffer(&w->buffer);
  if (result < 0 || (gsize) result != want) {
    post_write_error(self, result < 0 ? -result : EIO);
    return GST_FLOW_ERROR;
  }
  self->stat_writes++;
  self->stat_bytes += result;
  return GST_FLOW_OK;
}

/* Waits for every write in flight; the first failure wins. */
static GstFlowReturn
complete_all(GstUringSink *self)
{
  GstFlowReturn flow = GST_FLOW_OK;
  while (self->file.requests.count > 0) {
    const GstFlowReturn one = complete_oldest(self);
    if (flow == GST_FLOW_OK)
      flow = one;
  }
  return flow;
}

/* Prepares the write of one buffer after the previous ones. */
static GstFlowReturn
queue_write(GstUringSink *self, GstBuffer *buffer)
{
  if (self->failed)
    return GST_FLOW_ERROR;
  if (self->file.requests.count == self->file.requests.size) {
    const GstFlowReturn flow = complete_oldest(self);
    if (flow != GST_FLOW_OK)
      return flow;
  }
  GstMapInfo map;
  if (!gst_buffer_map(buffer, &map, GST_MAP_READ)) {
    GST_ELEMENT_ERROR(self, RESOURCE, WRITE,
                      ("Cannot read a buffer to write: its memory could not be mapped."), (NULL));
    return GST_FLOW_ERROR;
  }
  if (map.size == 0) {
    gst_buffer_unmap(buffer, &map);
    return GST_FLOW_OK;
  }
  gst_pp_registrar_add(self->file.registrar, buffer);
  GstUringWrite *w = gst_pp_ring_push(&self->file.requests);
  w->buffer = gst_buffer_ref(buffer);
  w->map = map;
  const int rc = pp_io_submit(self->file.io, map.data, map.size, self->position, w);
  if (rc < 0) {
    gst_buffer_unmap(buffer, &w->map);
    gst_clear_buffer(&w->buffer);
    gst_pp_ring_unpush(&self->file.requests);
    post_write_error(self, -rc);
    return GST_FLOW_ERROR;
  }
  self->position += map.size;
  return GST_FLOW_OK;
}

/* Starts what queue_write prepared: one submission however many. */
static GstFlowReturn
start_writes(GstUringSink *self, GstFlowReturn flow)
{
  const int rc = pp_io_flush(self->file.io);
  if (rc < 0 && flow == GST_FLOW_OK) {
    post_write_error(self, -rc);
    return GST_FLOW_ERROR;
  }
  return flow;
}

static GstFlowReturn
gst_uring_sink_render(GstBaseSink *bsink, GstBuffer *buffer)
{
  GstUringSink *self = GST_URING_SINK(bsink);
  return start_writes(self, queue_write(self, buffer));
}

/* A buffer list's writes go to the kernel together. */
static GstFlowReturn
gst_uring_sink_render_list(GstBaseSink *bsink, GstBufferList *list)
{
  GstUringSink *self = GST_URING_SINK(bsink);
  GstFlowReturn flow = GST_FLOW_OK;
  const guint n = gst_buffer_list_length(list);
  for (guint i = 0; i < n && flow == GST_FLOW_OK; i++)
    flow = queue_write(self, gst_buffer_list_get(list, i));
  return start_writes(self, flow);
}

static gboolean
gst_uring_sink_event(GstBaseSink *bsink, GstEvent *event)
{
  GstUringSink *self = GST_URING_SINK(bsink);
  if (GST_EVENT_TYPE(event) == GST_EVENT_EOS && self->file.io) {
    /* EOS means the file is complete: every write, and the disk if asked. */
    gboolean ok = complete_all(self) == GST_FLOW_OK;
    GST_OBJECT_LOCK(self);
    const gboolean want_fsync = self->fsync;
    GST_OBJECT_UNLOCK(self);
    gchar *msg = NULL;
    if (ok && want_fsync && pp_io_sync(self->file.io, &msg) < 0) {
      GST_ELEMENT_ERROR(self, RESOURCE, SYNC,
                        ("Error while writing to file \"%s\": %s.", self->file.location, msg),
                        ("%s", msg));
      ok = FALSE;
    }
    g_clear_pointer(&msg, g_free);
    if (!ok) {
      gst_event_unref(event);
      return FALSE;
    }
  }
  return GST_BASE_SINK_CLASS(parent_class)->event(bsink, event);
}

static gboolean
gst_uring_sink_start(GstBaseSink *bsink)
{
  GstUringSink *self = GST_URING_SINK(bsink);
  GST_OBJECT_LOCK(self);
  const pp_io_options opts = { .access = self->append ? PP_IO_APPEND : PP_IO_WRITE };
  GST_OBJECT_UNLOCK(self);
  if (!gst_pp_uring_file_open(&self->file, GST_ELEMENT(self), opts, sizeof(GstUringWrite)))
    return FALSE;
  /* Appends go after what is there (pp_io places them); the rest from 0. */
  self->position = 0;
  self->failed = FALSE;
  self->stat_writes = self->stat_bytes = 0;
  return TRUE;
}

static gboolean
gst_uring_sink_stop(GstBaseSink *bsink)
{
  GstUringSink *self = GST_URING_SINK(bsink);
  if (self->file.io)
    complete_all(self);
  gst_pp_uring_file_close(&self->file);
  return TRUE;
}

static gboolean
gst_uring_sink_query(GstBaseSink *bsink, GstQuery *query)
{
  GstUringSink *self = GST_URING_SINK(bsink);
  if (GST_QUERY_TYPE(query) == GST_QUERY_POSITION) {
    GstFormat format;
    gst_query_parse_position(query, &format, NULL);
    if (format == GST_FORMAT_BYTES || format == GST_FORMAT_DEFAULT) {
      gst_query_set_position(query, GST_FORMAT_BYTES, self->position);
      return TRUE;
    }
  }
  return GST_BASE_SINK_CLASS(parent_class)->query(bsink, query);
}

/* ---- GObject -------------------------------------------------------------------- */

static void
gst_uring_sink_set_property(GObject *object, guint prop_id, const GValue *value, GParamSpec *pspec)
{
  GstUringSink *self = GST_URING_SINK(object);
  GST_OBJECT_LOCK(self);
  if (gst_pp_uring_file_set_property(&self->file, prop_id, value)) {
    GST_OBJECT_UNLOCK(self);
    return;
  }
  switch (prop_id) {
    case PROP_APPEND:
      self->append = g_value_get_boolean(value);
      break;
    case PROP_FSYNC:
      self->fsync = g_value_get_boolean(value);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK(self);
}

static void
gst_uring_sink_get_property(GObject *object, guint prop_id, GValue *value, GParamSpec *pspec)
{
  GstUringSink *self = GST_URING_SINK(object);
  GST_OBJECT_LOCK(self);
  if (gst_pp_uring_file_get_property(&self->file, prop_id, value)) {
    GST_OBJECT_UNLOCK(self);
    return;
  }
  switch (prop_id) {
    case PROP_APPEND:
      g_value_set_boolean(value, self->append);
      break;
    case PROP_FSYNC:
      g_value_set_boolean(value, self->fsync);
      break;
    case PROP_STATS:
      g_value_take_boxed(value,
                         gst_structure_new("application/x-uringsink-stats", "writes", G_TYPE_UINT64,
                                           self->stat_writes, "bytes", G_TYPE_UINT64,
                                           self->stat_bytes, "io", G_TYPE_STRING,
                                           gst_pp_uring_file_io_name(&self->file), NULL));
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK(self);
}

static void
gst_uring_sink_finalize(GObject *object)
{
  GstUringSink *self = GST_URING_SINK(object);
  gst_pp_uring_file_clear(&self->file);
  G_OBJECT_CLASS(parent_class)->finalize(object);
}

#define CONFIG_FLAGS (G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY)

static void
gst_uring_sink_class_init(GstUringSinkClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS(klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS(klass);
  GstBaseSinkClass *base_class = GST_BASE_SINK_CLASS(klass);

  object_class->set_property = gst_uring_sink_set_property;
  object_class->get_property = gst_uring_sink_get_property;
  object_class->finalize = gst_uring_sink_finalize;

  gst_pp_uring_file_install_properties(object_class, "write", "Writes in flight",
                                       DEFAULT_QUEUE_DEPTH);
  g_object_class_install_property(
      object_class, PROP_APPEND,
      g_param_spec_boolean("append", "Append", "Append to the file instead of truncating it",
                           DEFAULT_APPEND, CONFIG_FLAGS));
  g_object_class_install_property(
      object_class, PROP_FSYNC,
      g_param_spec_boolean("fsync", "fsync", "fsync() the file at EOS, so EOS means on disk",
                           DEFAULT_FSYNC, CONFIG_FLAGS));
  g_object_class_install_property(
      object_class, PROP_STATS,
      g_param_spec_boxed("stats", "Statistics",
                         "Writes and bytes completed, and whether io_uring or pwrite is in use",
                         GST_TYPE_STRUCTURE, G_PARAM_READABLE | G_PARAM_STATIC_STRINGS));

  gst_element_class_add_static_pad_template(element_class, &sink_template);
  gst_element_class_set_static_metadata(element_class, "io_uring file sink", "Sink/File",
                                        "Writes buffers to a file with several io_uring writes in "
                                        "flight, in order",
                                        "pingpong developers");
  base_class->start = GST_DEBUG_FUNCPTR(gst_uring_sink_start);
  base_class->stop = GST_DEBUG_FUNCPTR(gst_uring_sink_stop);
  base_class->render = GST_DEBUG_FUNCPTR(gst_uring_sink_render);
  base_class->render_list = GST_DEBUG_FUNCPTR(gst_uring_sink_render_list);
  base_class->event = GST_DEBUG_FUNCPTR(gst_uring_sink_event);
  base_class->query = GST_DEBUG_FUNCPTR(gst_uring_sink_query);
  GST_DEBUG_CATEGORY_INIT(gst_uring_sink_debug, "uringsink", 0, "pingpong io_uring file sink");
}

static void
gst_uring_sink_init(GstUringSink *self)
{
  gst_pp_uring_file_init(&self->file, DEFAULT_QUEUE_DEPTH);
  self->append = DEFAULT_APPEND;
  self->fsync = DEFAULT_FSYNC;
  gst_base_sink_set_sync(GST_BASE_SINK(self), FALSE);
}
