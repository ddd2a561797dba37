// SPDX-License-Identifier: LGPL-2.1-or-later
/* A link to an MQTT broker through libmosquitto, kept up in the
 * background: it connects, and reconnects 1 to 5 s apart after the broker
 * goes away, on libmosquitto's own thread. Every link of the process to
 * one broker (host and port) shares one connection and that thread; each
 * counts its own messages. Messages handed over while it is down are
 * refused, not queued, so the caller counts them. */
#ifndef GST_PP_MQTT_LINK_H
#define GST_PP_MQTT_LINK_H

#include <glib.h>

G_BEGIN_DECLS

typedef struct _GstPpMqttLink GstPpMqttLink;

/* Called on libmosquitto's thread when the connection comes up
 * (connected) or goes down (reason says why). */
typedef void (*GstPpMqttNotify)(gpointer data, gboolean connected, const char *reason);

/* host and port of the broker; NULL with *msg when they cannot be used at
 * all (a name that does not resolve is retried like a broker that is
 * down). The connection, when this link opens it (the first to this
 * broker), is client_id-host:port at the broker; notify is called at once
 * when it is already up. */
GstPpMqttLink *gst_pp_mqtt_link_new(const char *host, int port, const char *client_id,
                                    GstPpMqttNotify notify, gpointer data, gchar **msg);
void gst_pp_mqtt_link_free(GstPpMqttLink *link);

gboolean gst_pp_mqtt_link_connected(GstPpMqttLink *link);
/* Waits up to timeout_ms for the link to be up; whether it is. */
gboolean gst_pp_mqtt_link_wait_connected(GstPpMqttLink *link, guint timeout_ms);

/* Hands one message to libmosquitto: FALSE, with *reason, when the link is
 * down or libmosquitto refuses it. */
gboolean gst_pp_mqtt_link_publish(GstPpMqttLink *link, const char *topic, const void *payload,
                                  gsize size, int qos, const char **reason);

/* This link's messages the broker acknowledged (QoS 1, 2) or that went
 * out (QoS 0). */
guint64 gst_pp_mqtt_link_done(GstPpMqttLink *link);

/* Waits up to timeout_ms for every message this link handed over to be
 * done; the number still not done. */
guint64 gst_pp_mqtt_link_flush(GstPpMqttLink *link, guint timeout_ms);

/* "host[:port]" into its parts (port 1883 when left out); FALSE when
 * malformed. */
gboolean gst_pp_mqtt_parse_broker(const char *text, gchar **host, int *port);

G_END_DECLS

#endif
