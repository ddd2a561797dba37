// SPDX-License-Identifier: LGPL-2.1-or-later
/**
 * SECTION:element-scorepublish
 * @title: scorepublish
 *
 * Sends each frame's scores, as cudamlp computed them, to where a site's
 * other systems read them: one JSON message per frame to an MQTT broker
 * (#GstScorePublish:broker, topic per stream) and/or one JSON line per
 * frame to a file (#GstScorePublish:location). A message holds the
 * stream's name, the frame's number and timestamp, the scores' shape,
 * their minimum, maximum and mean, the cells above
 * #GstScorePublish:threshold and, with #GstScorePublish:grid, every score.
 *
 * Every frame is accounted for: sent to the broker (and then acknowledged
 * by it, at QoS 1 or 2), or counted as unpublished while the broker is
 * away. Frames that never reached it (lost on the network, dropped by a
 * jitterbuffer or a decoder) are counted too, where the caps give a frame
 * rate: a gap between two frames' timestamps is that many frames missing,
 * each gap an element message ("scorepublish-missing") and the message
 * after it saying "missing-before". A stream that stops (a camera gone
 * away) is said while it is away: a warning when no frame has come for
 * #GstScorePublish:stall-timeout ms, and a "scorepublish-resumed" message
 * when frames come again. A broker that goes away is a warning on the bus, once per outage;
 * the element reconnects by itself and says so when it is back. At EOS it
 * waits up to 2 s for the broker's acknowledgements and posts a
 * "scorepublish-summary" element message with the counts, which
 * #GstScorePublish:stats also reads.
 *
 * It takes cudamlp's output as it comes: frames carrying the scores meta
 * (`output=video-meta`) or other/tensors buffers of float32 scores
 * (`output=tensors`).
 *
 * ## Example launch line
 * |[
 * gst-launch-1.0 -m videotestsrc num-buffers=100 ! cudamlp output=video-meta ! scorepublish stream-name=cam1 broker=localhost location=cam1.jsonl
 * ]|
 */
#include "gstscorepublish.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "pingpong/ppscores.h"
#include "scorejson.h"
#include "scorepublishprops.h"
#include "streamwatch.h"
#include "tensorcaps.h"

GST_DEBUG_CATEGORY_STATIC(gst_score_publish_debug);
#define GST_CAT_DEFAULT gst_score_publish_debug

/* How long EOS waits for the broker to acknowledge what was sent. */
#define FLUSH_MS 2000
/* How long start waits for the first connection. */
#define CONNECT_WAIT_MS 1000

static GstStaticPadTemplate sink_template =
    GST_STATIC_PAD_TEMPLATE("sink", GST_PAD_SINK, GST_PAD_ALWAYS,
                            GST_STATIC_CAPS("video/x-raw(ANY); other/tensors, types=float32"));

#define gst_score_publish_parent_class parent_class
G_DEFINE_TYPE(GstScorePublish, gst_score_publish, GST_TYPE_BASE_SINK);
GST_ELEMENT_REGISTER_DEFINE(scorepublish, "scorepublish", GST_RANK_NONE, GST_TYPE_SCORE_PUBLISH);

/* ---- the broker's comings and goings (libmosquitto's thread) ------------ */

static void
broker_changed(gpointer data, gboolean connected, const char *reason)
{
  GstScorePublish *self = data;
  if (connected) {
    GST_INFO_OBJECT(self, "connected to the MQTT broker at %s", self->broker);
    gst_element_post_message(
        GST_ELEMENT(self),
        gst_message_new_element(
            GST_OBJECT(self),
            gst_structure_new("scorepublish-broker", "connected", G_TYPE_BOOLEAN, TRUE, NULL)));
  } else {
    GST_INFO_OBJECT(self, "the MQTT broker at %s went away: %s", self->broker, reason);
  }
}

/* ---- the stream's watch ------------------------------------------------------ */

/* The system clock's thread: no frame for `ms`. */
static void
stalled(GstObject *owner, guint ms)
{
  GstScorePublish *self = GST_SCORE_PUBLISH(owner);
  GST_ELEMENT_WARNING(self, STREAM, FAILED,
                      ("Stream %s: no frame for %u ms (the camera or the network may have gone "
                       "away); the others go on, and this one is counted again when its frames "
                       "come back.",
                       self->name_used, ms),
                      (NULL));
}

/* A frame came: what the watch found said (frames missing before it, a
 * stall that ended); the frames missing returned. */
static guint64
watch_frame(GstScorePublish *self, GstClockTime pts)
{
  guint64 missing, resumed_ms;
  gst_pp_stream_watch_frame(&self->watch, pts, &missing, &resumed_ms);
  if (resumed_ms)
    gst_element_post_message(
        GST_ELEMENT(self),
        gst_message_new_element(GST_OBJECT(self),
                                gst_structure_new("scorepublish-resumed", "stream", G_TYPE_STRING,
                                                  self->name_used, "after-ms", G_TYPE_UINT64,
                                                  resumed_ms, NULL)));
  if (missing) {
    GST_INFO_OBJECT(self, "%" G_GUINT64_FORMAT " frames missing before %" GST_TIME_FORMAT, missing,
                    GST_TIME_ARGS(pts));
    gst_element_post_message(
        GST_ELEMENT(self),
        gst_message_new_element(GST_OBJECT(self),
                                gst_structure_new("scorepublish-missing", "stream", G_TYPE_STRING,
                                                  self->name_used, "frames", G_TYPE_UINT64, missing,
                                                  "before-pts", G_TYPE_UINT64, pts, NULL)));
  }
  return missing;
}

/* ---- start and stop ------------------------------------------------------- */

static gboolean
open_link(GstScorePublish *self)
{
  gchar *host = NULL, *why = NULL;
  int port;
  if (!gst_pp_mqtt_parse_broker(self->broker, &host, &port)) {
    GST_ELEMENT_ERROR(self, RESOURCE, SETTINGS,
                      ("broker=\"%s\" is not a broker: give host or host:port (1883 when left "
                       "out).",
                       self->broker),
                      (NULL));
    return FALSE;
  }
  /* The process's one connection to this broker, whichever stream opens it. */
  gchar *client = g_strdup_printf("pingpong-%d", (int) getpid());
  self->link = gst_pp_mqtt_link_new(host, port, client, broker_changed, self, &why);
  g_free(client);
  g_free(host);
  if (!self->link) {
    GST_ELEMENT_ERROR(self, RESOURCE, OPEN_WRITE,
                      ("Could not use the MQTT broker \"%s\": %s.", self->broker, why), (NULL));
    g_free(why);
    return FALSE;
  }
  /* Frames that come before the first connection would be unpublished
   * though the broker is up: give it a moment (a broker that is down is
   * said with the first frame). */
  gst_pp_mqtt_link_wait_connected(self->link, CONNECT_WAIT_MS);
  return TRUE;
}

static gboolean
gst_score_publish_start(GstBaseSink *sink)
{
  GstScorePublish *self = GST_SCORE_PUBLISH(sink);
  GST_OBJECT_LOCK(self);
  self->name_used = g_strdup(self->stream_name ? self->stream_name : GST_OBJECT_NAME(self));
  self->topic_used =
      self->topic ? g_strdup(self->topic) : g_strdup_printf("pingpong/%s/scores", self->name_used);
  self->frames = self->written = self->published = self->unpublished = self->outages = 0;
  const guint stall_ms = self->stall_ms;
  self->outage_said = FALSE;
  const gboolean nowhere = !self->location && !self->broker;
  GST_OBJECT_UNLOCK(self);
  gst_pp_stream_watch_start(&self->watch, stall_ms, stalled, GST_OBJECT(self));
  if (nowhere) {
    GST_ELEMENT_ERROR(self, RESOURCE, SETTINGS,
                      ("scorepublish has nowhere to send the scores: set broker=host[:port] "
                       "and/or location=FILE."),
                      (NULL));
    return FALSE;
  }
  if (self->location && !(self->file = fopen(self->location, "w"))) {
    GST_ELEMENT_ERROR(
        self, RESOURCE, OPEN_WRITE,
        ("Could not open \"%s\" to write the scores: %s.", self->location, g_strerror(errno)),
        (NULL));
    return FALSE;
  }
  return !self->broker || open_link(self);
}

static gboolean
gst_score_publish_stop(GstBaseSink *sink)
{
  GstScorePublish *self = GST_SCORE_PUBLISH(sink);
  gst_pp_stream_watch_stop(&self->watch);
  g_clear_pointer(&self->link, gst_pp_mqtt_link_free);
  if (self->file)
    fclose(self->file);
  self->file = NULL;
  g_clear_pointer(&self->name_used, g_free);
  g_clear_pointer(&self->topic_used, g_free);
  return TRUE;
}

static gboolean
gst_score_publish_set_caps(GstBaseSink *sink, GstCaps *caps)
{
  GstScorePublish *self = GST_SCORE_PUBLISH(sink);
  const GstStructure *s = gst_caps_get_structure(caps, 0);
  self->tensor_samples = self->tensor_outputs = 0;
  gint fps_n = 0, fps_d = 1;
  if (!gst_structure_get_fraction(s, "framerate", &fps_n, &fps_d))
    fps_n = 0;
  gst_pp_stream_watch_set_rate(&self->watch, fps_n, fps_d);
  if (!gst_structure_has_name(s, "other/tensors"))
    return TRUE;
  const gchar *dims = gst_structure_get_string(s, "dimensions");
  guint k, n, grouped;
  if (!dims || !pp_parse_tensor_dimensions(dims, 0, &k, &n, &grouped)) {
    GST_ELEMENT_ERROR(self, STREAM, FORMAT,
                      ("other/tensors caps without dimensions scorepublish can read: %s.",
                       dims ? dims : "none given"),
                      (NULL));
    return FALSE;
  }
  self->tensor_outputs = k;
  self->tensor_samples = n;
  return TRUE;
}

/* ---- each frame ------------------------------------------------------------ */

/* The frame's scores from its meta, or the buffer itself for tensors;
 * `map` is unmapped by the caller where it was used. */
static gboolean
read_scores(GstScorePublish *self, GstBuffer *buf, GstPpScoreFrame *f, GstMapInfo *map,
            gboolean *mapped)
{
  *mapped = FALSE;
  const GstStructure *s = pp_scores_meta_get(buf);
  if (s) {
    gsize size;
    *f = (GstPpScoreFrame){ .mapping = gst_structure_get_string(s, "mapping") };
    f->data = pp_scores_meta_data(s, &size);
    gst_structure_get_uint(s, "samples", &f->samples);
    gst_structure_get_uint(s, "outputs", &f->outputs);
    gst_structure_get_uint(s, "grid-width", &f->grid_width);
    gst_structure_get_uint(s, "grid-height", &f->grid_height);
    return f->data && f->mapping && size >= (gsize) f->samples * f->outputs * sizeof(float);
  }
  if (!self->tensor_outputs || !gst_buffer_map(buf, map, GST_MAP_READ))
    return FALSE;
  *mapped = TRUE;
  *f = (GstPpScoreFrame){
    (const float *) map->data, self->tensor_samples, self->tensor_outputs, "tensor", 1,
    self->tensor_samples
  };
  return map->size >= (gsize) f->samples * f->outputs * sizeof(float);
}

/* To the broker, or counted as unpublished: said once per outage. */
static void
publish(GstScorePublish *self, const gchar *json, gint qos)
{
  const char *why = NULL;
  const gboolean sent =
      gst_pp_mqtt_link_publish(self->link, self->topic_used, json, strlen(json), qos, &why);
  GST_OBJECT_LOCK(self);
  if (sent)
    self->published++;
  else
    self->unpublished++;
  const gboolean new_outage = !sent && !self->outage_said;
  if (new_outage)
    self->outages++;
  GST_OBJECT_UNLOCK(self);
  if (sent) {
    self->outage_said = FALSE;
  } else if (new_outage) {
    self->outage_said = TRUE;
    GST_ELEMENT_WARNING(self, RESOURCE, WRITE,
                        ("The MQTT broker at %s is not reachable (%s): frames are counted as "
                         "unpublished until it is back.",
                         self->broker, why),
                        (NULL));
  }
}

static GstFlowReturn
gst_score_publish_render(GstBaseSink *sink, GstBuffer *buf)
{
  GstScorePublish *self = GST_SCORE_PUBLISH(sink);
  GstPpScoreFrame f;
  GstMapInfo map;
  gboolean mapped;
  if (!read_scores(self, buf, &f, &map, &mapped)) {
    if (mapped)
      gst_buffer_unmap(buf, &map);
    GST_ELEMENT_ERROR(self, STREAM, FORMAT,
                      ("scorepublish got a buffer without scores: give it cudamlp's output "
                       "(output=video-meta, or output=tensors)."),
                      (NULL));
    return GST_FLOW_ERROR;
  }
  const guint64 missing = watch_frame(self, GST_BUFFER_PTS(buf));
  GST_OBJECT_LOCK(self);
  const GstPpScoreMessage m = { self->name_used, self->frames,    GST_BUFFER_PTS(buf),
                                self->threshold, self->max_cells, self->grid,
                                missing };
  const gint qos = self->qos;
  self->frames++;
  GST_OBJECT_UNLOCK(self);
  gchar *json = gst_pp_score_json(&m, &f);
  if (mapped)
    gst_buffer_unmap(buf, &map);
  GstFlowReturn ret = GST_FLOW_OK;
  if (self->file) {
    if (fputs(json, self->file) < 0 || fputc('\n', self->file) < 0 || fflush(self->file) != 0) {
      GST_ELEMENT_ERROR(
          self, RESOURCE, WRITE,
          ("Could not write the scores to \"%s\": %s.", self->location, g_strerror(errno)), (NULL));
      ret = GST_FLOW_ERROR;
    } else {
      GST_OBJECT_LOCK(self);
      self->written++;
      GST_OBJECT_UNLOCK(self);
    }
  }
  if (ret == GST_FLOW_OK && self->link)
    publish(self, json, qos);
  g_free(json);
  return ret;
}

static gboolean
gst_score_publish_event(GstBaseSink *sink, GstEvent *event)
{
  GstScorePublish *self = GST_SCORE_PUBLISH(sink);
  if (GST_EVENT_TYPE(event) == GST_EVENT_EOS) {
    gst_pp_stream_watch_stop(&self->watch); /* the stream ended: no frame is due */
    const guint64 left = self->link ? gst_pp_mqtt_link_flush(self->link, FLUSH_MS) : 0;
    GstStructure *s = gst_score_publish_stats(self, left);
    gchar *line = gst_structure_to_string(s);
    GST_INFO_OBJECT(self, "%s", line);
    g_free(line);
    gst_element_post_message(GST_ELEMENT(self), gst_message_new_element(GST_OBJECT(self), s));
  }
  return GST_BASE_SINK_CLASS(parent_class)->event(sink, event);
}

/* ---- properties ------------------------------------------------------------- */

static void
gst_score_publish_finalize(GObject *object)
{
  GstScorePublish *self = GST_SCORE_PUBLISH(object);
  g_free(self->stream_name), g_free(self->location), g_free(self->broker), g_free(self->topic);
  gst_pp_stream_watch_clear(&self->watch);
  G_OBJECT_CLASS(parent_class)->finalize(object);
}

static void
gst_score_publish_class_init(GstScorePublishClass *klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS(klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS(klass);
  GstBaseSinkClass *sink_class = GST_BASE_SINK_CLASS(klass);
  gobject_class->finalize = gst_score_publish_finalize;
  gst_score_publish_install_properties(gobject_class);
  gst_element_class_add_static_pad_template(element_class, &sink_template);
  gst_element_class_set_static_metadata(element_class, "Scores publisher", "Sink/Network",
                                        "Sends each frame's scores as JSON to an MQTT broker "
                                        "and/or a file of JSON lines, every frame accounted for",
                                        "pingpong");
  sink_class->start = gst_score_publish_start;
  sink_class->stop = gst_score_publish_stop;
  sink_class->set_caps = gst_score_publish_set_caps;
  sink_class->render = gst_score_publish_render;
  sink_class->event = gst_score_publish_event;
  GST_DEBUG_CATEGORY_INIT(gst_score_publish_debug, "scorepublish", 0, "scores to MQTT and JSON");
}

static void
gst_score_publish_init(GstScorePublish *self)
{
  gst_score_publish_init_properties(self);
  gst_pp_stream_watch_init(&self->watch);
  /* Scores go out as they come, whatever the clock says. */
  gst_base_sink_set_sync(GST_BASE_SINK(self), FALSE);
}
