// SPDX-License-Identifier: LGPL-2.1-or-later
/* scorepublish: each frame's scores as a JSON message, to an MQTT broker
 * and/or a file of JSON lines, every frame counted as sent or not. */
#ifndef GST_SCORE_PUBLISH_H
#define GST_SCORE_PUBLISH_H

#include <gst/base/gstbasesink.h>
#include <stdio.h>

#include "mqttlink.h"
#include "streamwatch.h"

G_BEGIN_DECLS

#define GST_TYPE_SCORE_PUBLISH (gst_score_publish_get_type())
G_DECLARE_FINAL_TYPE(GstScorePublish, gst_score_publish, GST, SCORE_PUBLISH, GstBaseSink)

GST_ELEMENT_REGISTER_DECLARE(scorepublish);

struct _GstScorePublish {
  GstBaseSink parent;

  /* Properties, under the object lock. */
  gchar *stream_name, *location, *broker, *topic;
  gint qos;
  guint stall_ms;
  gdouble threshold;
  guint max_cells;
  gboolean grid;

  /* From start to stop. */
  gchar *name_used, *topic_used;
  FILE *file;
  GstPpMqttLink *link;
  /* other/tensors input: the shape its caps give (0: none). */
  guint tensor_samples, tensor_outputs;
  /* Whether frames keep coming, and which never came. */
  GstPpStreamWatch watch;
  /* Counts, under the object lock: frames in, lines written, messages
   * handed to the broker's link and not, how often it went away. */
  guint64 frames, written, published, unpublished, outages;
  /* The current outage has been said (streaming thread only). */
  gboolean outage_said;
};

G_END_DECLS

#endif
