// SPDX-License-Identifier: LGPL-2.1-or-later
/* The MQTT connection (mqttlink.h): libmosquitto's connect_async and
 * loop_start, whose thread reconnects by itself; counts under a mutex. */
#include "mqttlink.h"

#include <errno.h>
#include <mosquitto.h>
#include <stdlib.h>
#include <string.h>

#define KEEPALIVE_S 10

struct _GstPpMqttLink {
  struct mosquitto *mosq;
  GstPpMqttNotify notify;
  gpointer data;
  GMutex lock;
  GCond changed; /* connected or done moved */
  gboolean connected;
  const char *last_reason; /* why it is down, libmosquitto's static words */
  guint64 handed, done;
};

static void
on_connect(struct mosquitto *mosq, void *obj, int rc)
{
  (void) mosq;
  GstPpMqttLink *l = obj;
  g_mutex_lock(&l->lock);
  l->connected = rc == 0;
  l->last_reason = rc == 0 ? NULL : mosquitto_connack_string(rc);
  g_cond_broadcast(&l->changed);
  g_mutex_unlock(&l->lock);
  l->notify(l->data, rc == 0, l->last_reason);
}

static void
on_disconnect(struct mosquitto *mosq, void *obj, int rc)
{
  (void) mosq;
  GstPpMqttLink *l = obj;
  g_mutex_lock(&l->lock);
  const gboolean was = l->connected;
  l->connected = FALSE;
  if (rc != 0)
    l->last_reason = mosquitto_strerror(rc);
  g_mutex_unlock(&l->lock);
  /* rc 0: our own disconnect at the end. */
  if (was && rc != 0)
    l->notify(l->data, FALSE, mosquitto_strerror(rc));
}

static void
on_publish(struct mosquitto *mosq, void *obj, int mid)
{
  (void) mosq, (void) mid;
  GstPpMqttLink *l = obj;
  g_mutex_lock(&l->lock);
  l->done++;
  g_cond_broadcast(&l->changed);
  g_mutex_unlock(&l->lock);
}

static gpointer
init_library(gpointer unused)
{
  (void) unused;
  mosquitto_lib_init();
  return NULL;
}

GstPpMqttLink *
gst_pp_mqtt_link_new(const char *host, int port, const char *client_id, GstPpMqttNotify notify,
                     gpointer data, gchar **msg)
{
  static GOnce once = G_ONCE_INIT;
  g_once(&once, init_library, NULL);
  GstPpMqttLink *l = g_new0(GstPpMqttLink, 1);
  g_mutex_init(&l->lock);
  g_cond_init(&l->changed);
  l->notify = notify;
  l->data = data;
  l->mosq = mosquitto_new(client_id, true, l);
  if (!l->mosq) {
    *msg = g_strdup_printf("mosquitto_new: %s", g_strerror(errno));
    gst_pp_mqtt_link_free(l);
    return NULL;
  }
  mosquitto_connect_callback_set(l->mosq, on_connect);
  mosquitto_disconnect_callback_set(l->mosq, on_disconnect);
  mosquitto_publish_callback_set(l->mosq, on_publish);
  mosquitto_reconnect_delay_set(l->mosq, 1, 5, false);
  /* A broker that is not up yet is the loop's to retry, as one that goes. */
  const int rc = mosquitto_connect_async(l->mosq, host, port, KEEPALIVE_S);
  if (rc == MOSQ_ERR_INVAL) {
    *msg = g_strdup_printf("%s:%d cannot be a broker: %s", host, port, mosquitto_strerror(rc));
    gst_pp_mqtt_link_free(l);
    return NULL;
  }
  const int loop = mosquitto_loop_start(l->mosq);
  if (loop != MOSQ_ERR_SUCCESS) {
    *msg = g_strdup_printf("mosquitto_loop_start: %s", mosquitto_strerror(loop));
    gst_pp_mqtt_link_free(l);
    return NULL;
  }
  return l;
}

void
gst_pp_mqtt_link_free(GstPpMqttLink *l)
{
  if (!l)
    return;
  if (l->mosq) {
    mosquitto_disconnect(l->mosq);
    mosquitto_loop_stop(l->mosq, true);
    mosquitto_destroy(l->mosq);
  }
  g_mutex_clear(&l->lock);
  g_cond_clear(&l->changed);
  g_free(l);
}

gboolean
gst_pp_mqtt_link_connected(GstPpMqttLink *l)
{
  g_mutex_lock(&l->lock);
  const gboolean up = l->connected;
  g_mutex_unlock(&l->lock);
  return up;
}

/* Waits, under the lock, up to timeout_ms for `settled`. */
static void
wait_for(GstPpMqttLink *l, gboolean (*settled)(const GstPpMqttLink *), guint timeout_ms)
{
  const gint64 until = g_get_monotonic_time() + (gint64) timeout_ms * 1000;
  while (!settled(l) && g_cond_wait_until(&l->changed, &l->lock, until))
    ;
}

static gboolean
is_connected(const GstPpMqttLink *l)
{
  return l->connected;
}

static gboolean
all_done(const GstPpMqttLink *l)
{
  return l->done >= l->handed;
}

gboolean
gst_pp_mqtt_link_wait_connected(GstPpMqttLink *l, guint timeout_ms)
{
  g_mutex_lock(&l->lock);
  wait_for(l, is_connected, timeout_ms);
  const gboolean up = l->connected;
  g_mutex_unlock(&l->lock);
  return up;
}

gboolean
gst_pp_mqtt_link_publish(GstPpMqttLink *l, const char *topic, const void *payload, gsize size,
                         int qos, const char **reason)
{
  g_mutex_lock(&l->lock);
  const gboolean up = l->connected;
  *reason = l->last_reason ? l->last_reason : "not connected";
  g_mutex_unlock(&l->lock);
  if (!up)
    return FALSE;
  /* Counted before it can be done, from the loop's thread. */
  g_mutex_lock(&l->lock);
  l->handed++;
  g_mutex_unlock(&l->lock);
  const int rc = mosquitto_publish(l->mosq, NULL, topic, (int) size, payload, qos, false);
  if (rc == MOSQ_ERR_SUCCESS)
    return TRUE;
  g_mutex_lock(&l->lock);
  l->handed--;
  g_mutex_unlock(&l->lock);
  *reason = mosquitto_strerror(rc);
  return FALSE;
}

guint64
gst_pp_mqtt_link_done(GstPpMqttLink *l)
{
  g_mutex_lock(&l->lock);
  const guint64 done = l->done;
  g_mutex_unlock(&l->lock);
  return done;
}

guint64
gst_pp_mqtt_link_flush(GstPpMqttLink *l, guint timeout_ms)
{
  g_mutex_lock(&l->lock);
  wait_for(l, all_done, timeout_ms);
  const guint64 left = l->handed > l->done ? l->handed - l->done : 0;
  g_mutex_unlock(&l->lock);
  return left;
}

gboolean
gst_pp_mqtt_parse_broker(const char *text, gchar **host, int *port)
{
  if (!text || !*text)
    return FALSE;
  const char *colon = strrchr(text, ':');
  char *end = NULL;
  long p = 1883;
  if (colon) {
    p = strtol(colon + 1, &end, 10);
    if (end == colon + 1 || *end || p < 1 || p > 65535 || colon == text)
      return FALSE;
  }
  *host = colon ? g_strndup(text, colon - text) : g_strdup(text);
  *port = (int) p;
  return TRUE;
}
