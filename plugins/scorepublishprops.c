// SPDX-License-Identifier: LGPL-2.1-or-later
/* scorepublish's properties (their specs, defaults, getters and setters)
 * and its counts as one structure (the stats property, and the summary at
 * EOS). */
#include "scorepublishprops.h"

#include "streamwatch.h"

#define DEFAULT_QOS 1
#define DEFAULT_THRESHOLD 0.5
#define DEFAULT_MAX_CELLS 100
#define DEFAULT_STALL_MS 2000

enum {
  PROP_0,
  PROP_STREAM_NAME,
  PROP_LOCATION,
  PROP_BROKER,
  PROP_TOPIC,
  PROP_QOS,
  PROP_STALL_TIMEOUT,
  PROP_THRESHOLD,
  PROP_MAX_CELLS,
  PROP_GRID,
  PROP_STATS,
};

GstStructure *
gst_score_publish_stats(GstScorePublish *self, guint64 unacknowledged)
{
  guint64 missing, stalls;
  gst_pp_stream_watch_counts(&self->watch, &missing, &stalls);
  GST_OBJECT_LOCK(self);
  GstStructure *s = gst_structure_new(
      "scorepublish-summary", "stream", G_TYPE_STRING,
      self->name_used ? self->name_used : GST_OBJECT_NAME(self), "frames", G_TYPE_UINT64,
      self->frames, "written", G_TYPE_UINT64, self->written, "published", G_TYPE_UINT64,
      self->published, "acknowledged", G_TYPE_UINT64,
      self->link ? gst_pp_mqtt_link_done(self->link) : (guint64) 0, "unacknowledged", G_TYPE_UINT64,
      unacknowledged, "unpublished", G_TYPE_UINT64, self->unpublished, "outages", G_TYPE_UINT64,
      self->outages, "missing", G_TYPE_UINT64, missing, "stalls", G_TYPE_UINT64, stalls, NULL);
  GST_OBJECT_UNLOCK(self);
  return s;
}

static void
gst_score_publish_set_property(GObject *object, guint id, const GValue *value, GParamSpec *pspec)
{
  GstScorePublish *self = GST_SCORE_PUBLISH(object);
  GST_OBJECT_LOCK(self);
  switch (id) {
    case PROP_STREAM_NAME:
      g_free(self->stream_name), self->stream_name = g_value_dup_string(value);
      break;
    case PROP_LOCATION:
      g_free(self->location), self->location = g_value_dup_string(value);
      break;
    case PROP_BROKER:
      g_free(self->broker), self->broker = g_value_dup_string(value);
      break;
    case PROP_TOPIC:
      g_free(self->topic), self->topic = g_value_dup_string(value);
      break;
    case PROP_QOS:
      self->qos = g_value_get_int(value);
      break;
    case PROP_STALL_TIMEOUT:
      self->stall_ms = g_value_get_uint(value);
      break;
    case PROP_THRESHOLD:
      self->threshold = g_value_get_double(value);
      break;
    case PROP_MAX_CELLS:
      self->max_cells = g_value_get_uint(value);
      break;
    case PROP_GRID:
      self->grid = g_value_get_boolean(value);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID(object, id, pspec);
  }
  GST_OBJECT_UNLOCK(self);
}

static void
gst_score_publish_get_property(GObject *object, guint id, GValue *value, GParamSpec *pspec)
{
  GstScorePublish *self = GST_SCORE_PUBLISH(object);
  if (id == PROP_STATS) {
    g_value_take_boxed(value, gst_score_publish_stats(self, 0));
    return;
  }
  GST_OBJECT_LOCK(self);
  switch (id) {
    case PROP_STREAM_NAME:
      g_value_set_string(value, self->stream_name);
      break;
    case PROP_LOCATION:
      g_value_set_string(value, self->location);
      break;
    case PROP_BROKER:
      g_value_set_string(value, self->broker);
      break;
    case PROP_TOPIC:
      g_value_set_string(value, self->topic);
      break;
    case PROP_QOS:
      g_value_set_int(value, self->qos);
      break;
    case PROP_STALL_TIMEOUT:
      g_value_set_uint(value, self->stall_ms);
      break;
    case PROP_THRESHOLD:
      g_value_set_double(value, self->threshold);
      break;
    case PROP_MAX_CELLS:
      g_value_set_uint(value, self->max_cells);
      break;
    case PROP_GRID:
      g_value_set_boolean(value, self->grid);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID(object, id, pspec);
  }
  GST_OBJECT_UNLOCK(self);
}

void
gst_score_publish_init_properties(GstScorePublish *self)
{
  self->qos = DEFAULT_QOS;
  self->stall_ms = DEFAULT_STALL_MS;
  self->threshold = DEFAULT_THRESHOLD;
  self->max_cells = DEFAULT_MAX_CELLS;
}

void
gst_score_publish_install_properties(GObjectClass *gobject_class)
{
  gobject_class->set_property = gst_score_publish_set_property;
  gobject_class->get_property = gst_score_publish_get_property;
  const GParamFlags rw = G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY;
  g_object_class_install_property(
      gobject_class, PROP_STREAM_NAME,
      g_param_spec_string("stream-name", "Stream name",
                          "The stream's name in each message and in the default topic (unset: "
                          "the element's name)",
                          NULL, rw));
  g_object_class_install_property(
      gobject_class, PROP_LOCATION,
      g_param_spec_string("location", "Location",
                          "A file to write each frame's message to, one JSON line per frame "
                          "(unset: none)",
                          NULL, rw));
  g_object_class_install_property(
      gobject_class, PROP_BROKER,
      g_param_spec_string("broker", "Broker",
                          "The MQTT broker as host or host:port (port 1883 when left out); "
                          "unset: no MQTT. Reconnects by itself after the broker goes away",
                          NULL, rw));
  g_object_class_install_property(
      gobject_class, PROP_TOPIC,
      g_param_spec_string("topic", "Topic", "The MQTT topic (unset: pingpong/<stream-name>/scores)",
                          NULL, rw));
  g_object_class_install_property(
      gobject_class, PROP_QOS,
      g_param_spec_int("qos", "QoS",
                       "MQTT quality of service: 0 at most once, 1 at least once "
                       "(acknowledged by the broker), 2 exactly once",
                       0, 2, DEFAULT_QOS, rw));
  g_object_class_install_property(
      gobject_class, PROP_STALL_TIMEOUT,
      g_param_spec_uint("stall-timeout", "Stall timeout",
                        "Milliseconds without a frame after which the stream is said to have "
                        "stopped (a warning; a message when frames come again); 0: never",
                        0, G_MAXUINT, DEFAULT_STALL_MS, rw));
  g_object_class_install_property(
      gobject_class, PROP_THRESHOLD,
      g_param_spec_double("threshold", "Threshold",
                          "Cells with a score above this are listed in each message", -G_MAXDOUBLE,
                          G_MAXDOUBLE, DEFAULT_THRESHOLD, rw));
  g_object_class_install_property(
      gobject_class, PROP_MAX_CELLS,
      g_param_spec_uint("max-cells", "Max cells",
                        "At most this many cells above the threshold are listed (above-count "
                        "counts them all)",
                        0, G_MAXUINT, DEFAULT_MAX_CELLS, rw));
  g_object_class_install_property(
      gobject_class, PROP_GRID,
      g_param_spec_boolean("grid", "Grid",
                           "Every score in each message too, as base64 of its float32 bytes "
                           "(scores-float32, sample-major)",
                           FALSE, rw));
  g_object_class_install_property(
      gobject_class, PROP_STATS,
      g_param_spec_boxed("stats", "Statistics",
                         "frames in; lines written; messages published (handed to the broker), "
                         "acknowledged by it, unpublished (the broker away); outages; frames "
                         "missing from the stream (gaps in its timestamps at its frame rate); "
                         "stalls (no frame for stall-timeout)",
                         GST_TYPE_STRUCTURE, G_PARAM_READABLE | G_PARAM_STATIC_STRINGS));
}
