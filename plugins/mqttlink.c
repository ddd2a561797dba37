// SPDX-License-Identifier: LGPL-2.1-or-later
/* The MQTT connection (mqttlink.h): one per broker in the process, shared
 * by every link to it, so a hundred streams publishing to one broker hold
 * one connection and one libmosquitto thread, not a hundred. libmosquitto's
 * connect_async and loop_start, whose thread reconnects by itself; each
 * link's counts under its broker's mutex, a message counted done for the
 * link that handed it over by its message id. */
#include "mqttlink.h"

#include <errno.h>
#include <mosquitto.h>
#include <stdlib.h>
#include <string.h>

#define KEEPALIVE_S 10
/* QoS 1 and 2 messages unacknowledged at once, of all the streams.
 * libmosquitto walks its list of them on every acknowledgement, so a long
 * one costs time: one connection on the H100 host (dev/mqtt-stress, 144
 * streams at 30 Hz) caught up within a second of the broker's return
 * from a 3 s stall with 20 to 256, 4 s after it with 4,096
 * (docs/PERFORMANCE.md). 256 is still 12,800 messages a second to a
 * broker 20 ms away. */
#define SEND_MAXIMUM 256

typedef struct {
  char *key; /* "host:port" */
  struct mosquitto *mosq;
  GMutex lock;   /* what follows, and its links' counts */
  GCond changed; /* connected, or a count, moved */
  gboolean connected;
  const char *last_reason; /* why it is down, libmosquitto's static words */
  GHashTable *owners;      /* message id → the link that handed it (NULL: gone) */
  GHashTable *early;       /* ids done before their publish call returned */
  /* Held while links are told of the connection, and to leave: a link
   * is never told after it has left. Recursive: a link may leave from
   * what it is told. */
  GRecMutex notify_lock;
  GPtrArray *links;
} Broker;

struct _GstPpMqttLink {
  Broker *broker;
  GstPpMqttNotify notify;
  gpointer data;
  guint64 handed, done;
};

/* Brokers by key, and the count of links of each (links->len). */
static GMutex registry_lock;
static GHashTable *registry;

static void
tell_links(Broker *b, gboolean connected, const char *reason)
{
  g_rec_mutex_lock(&b->notify_lock);
  /* A copy: a link that leaves from its notify leaves the array. */
  GPtrArray *links = g_ptr_array_copy(b->links, NULL, NULL);
  for (guint i = 0; i < links->len; i++) {
    GstPpMqttLink *l = links->pdata[i];
    if (g_ptr_array_find(b->links, l, NULL))
      l->notify(l->data, connected, reason);
  }
  g_ptr_array_unref(links);
  g_rec_mutex_unlock(&b->notify_lock);
}

static void
on_connect(struct mosquitto *mosq, void *obj, int rc)
{
  (void) mosq;
  Broker *b = obj;
  g_mutex_lock(&b->lock);
  b->connected = rc == 0;
  b->last_reason = rc == 0 ? NULL : mosquitto_connack_string(rc);
  const char *reason = b->last_reason;
  g_cond_broadcast(&b->changed);
  g_mutex_unlock(&b->lock);
  tell_links(b, rc == 0, reason);
}

static void
on_disconnect(struct mosquitto *mosq, void *obj, int rc)
{
  (void) mosq;
  Broker *b = obj;
  g_mutex_lock(&b->lock);
  const gboolean was = b->connected;
  b->connected = FALSE;
  if (rc != 0)
    b->last_reason = mosquitto_strerror(rc);
  g_mutex_unlock(&b->lock);
  /* rc 0: our own disconnect at the end. */
  if (was && rc != 0)
    tell_links(b, FALSE, mosquitto_strerror(rc));
}

/* Message `mid` done, for the link that handed it over: the map says
 * which, or (done before its publish call returned) `early` keeps it for
 * that call. */
static void
on_publish(struct mosquitto *mosq, void *obj, int mid)
{
  (void) mosq;
  Broker *b = obj;
  g_mutex_lock(&b->lock);
  gpointer link = NULL;
  if (g_hash_table_lookup_extended(b->owners, GINT_TO_POINTER(mid), NULL, &link)) {
    g_hash_table_remove(b->owners, GINT_TO_POINTER(mid));
    if (link)
      ((GstPpMqttLink *) link)->done++;
  } else {
    g_hash_table_add(b->early, GINT_TO_POINTER(mid));
  }
  g_cond_broadcast(&b->changed);
  g_mutex_unlock(&b->lock);
}

static gpointer
init_library(gpointer unused)
{
  (void) unused;
  mosquitto_lib_init();
  return NULL;
}

static void
broker_free(Broker *b)
{
  if (b->mosq) {
    mosquitto_disconnect(b->mosq);
    mosquitto_loop_stop(b->mosq, true);
    mosquitto_destroy(b->mosq);
  }
  g_hash_table_unref(b->owners);
  g_hash_table_unref(b->early);
  g_ptr_array_unref(b->links);
  g_rec_mutex_clear(&b->notify_lock);
  g_mutex_clear(&b->lock);
  g_cond_clear(&b->changed);
  g_free(b->key);
  g_free(b);
}

/* A connection to host:port, connecting in the background; NULL with
 * *msg when it cannot be made at all. */
static Broker *
broker_new(const char *key, const char *host, int port, const char *client_id, gchar **msg)
{
  Broker *b = g_new0(Broker, 1);
  b->key = g_strdup(key);
  g_mutex_init(&b->lock);
  g_cond_init(&b->changed);
  g_rec_mutex_init(&b->notify_lock);
  b->owners = g_hash_table_new(NULL, NULL);
  b->early = g_hash_table_new(NULL, NULL);
  b->links = g_ptr_array_new();
  /* The key in the id: two connections of one process, to two names of
   * one broker, must not take each other's place there. */
  g_autofree char *id = g_strdup_printf("%s-%s", client_id, key);
  b->mosq = mosquitto_new(id, true, b);
  if (!b->mosq) {
    *msg = g_strdup_printf("mosquitto_new: %s", g_strerror(errno));
    broker_free(b);
    return NULL;
  }
  /* Every stream's messages share this connection: each goes out at once
   * rather than behind the one before (Nagle), and QoS 1 and 2 may have
   * many unacknowledged, where libmosquitto's 20 would cap the rate at 20
   * a round trip to the broker, whatever the streams. */
  int opt = mosquitto_int_option(b->mosq, MOSQ_OPT_TCP_NODELAY, 1);
  if (opt == MOSQ_ERR_SUCCESS)
    opt = mosquitto_int_option(b->mosq, MOSQ_OPT_SEND_MAXIMUM, SEND_MAXIMUM);
  if (opt != MOSQ_ERR_SUCCESS) {
    *msg = g_strdup_printf("mosquitto_int_option: %s", mosquitto_strerror(opt));
    broker_free(b);
    return NULL;
  }
  mosquitto_connect_callback_set(b->mosq, on_connect);
  mosquitto_disconnect_callback_set(b->mosq, on_disconnect);
  mosquitto_publish_callback_set(b->mosq, on_publish);
  mosquitto_reconnect_delay_set(b->mosq, 1, 5, false);
  /* A broker that is not up yet is the loop's to retry, as one that goes. */
  const int rc = mosquitto_connect_async(b->mosq, host, port, KEEPALIVE_S);
  if (rc == MOSQ_ERR_INVAL) {
    *msg = g_strdup_printf("%s:%d cannot be a broker: %s", host, port, mosquitto_strerror(rc));
    broker_free(b);
    return NULL;
  }
  const int loop = mosquitto_loop_start(b->mosq);
  if (loop != MOSQ_ERR_SUCCESS) {
    *msg = g_strdup_printf("mosquitto_loop_start: %s", mosquitto_strerror(loop));
    broker_free(b);
    return NULL;
  }
  return b;
}

GstPpMqttLink *
gst_pp_mqtt_link_new(const char *host, int port, const char *client_id, GstPpMqttNotify notify,
                     gpointer data, gchar **msg)
{
  static GOnce once = G_ONCE_INIT;
  g_once(&once, init_library, NULL);
  g_autofree char *key = g_strdup_printf("%s:%d", host, port);
  g_mutex_lock(&registry_lock);
  if (!registry)
    registry = g_hash_table_new(g_str_hash, g_str_equal);
  Broker *b = g_hash_table_lookup(registry, key);
  if (!b && (b = broker_new(key, host, port, client_id, msg)))
    g_hash_table_insert(registry, b->key, b);
  GstPpMqttLink *l = NULL;
  if (b) {
    l = g_new0(GstPpMqttLink, 1);
    l->broker = b;
    l->notify = notify;
    l->data = data;
    g_rec_mutex_lock(&b->notify_lock);
    g_ptr_array_add(b->links, l);
    g_rec_mutex_unlock(&b->notify_lock);
  }
  g_mutex_unlock(&registry_lock);
  /* A link to a broker already up is told so, as the first one was. */
  if (l && gst_pp_mqtt_link_connected(l))
    notify(data, TRUE, NULL);
  return l;
}

void
gst_pp_mqtt_link_free(GstPpMqttLink *l)
{
  if (!l)
    return;
  Broker *b = l->broker;
  g_mutex_lock(&registry_lock);
  g_rec_mutex_lock(&b->notify_lock);
  g_ptr_array_remove(b->links, l);
  const gboolean last = b->links->len == 0;
  g_rec_mutex_unlock(&b->notify_lock);
  /* Its messages still on their way are nobody's now. */
  g_mutex_lock(&b->lock);
  GHashTableIter it;
  gpointer key, value;
  g_hash_table_iter_init(&it, b->owners);
  while (g_hash_table_iter_next(&it, &key, &value))
    if (value == l)
      g_hash_table_iter_replace(&it, NULL);
  g_mutex_unlock(&b->lock);
  if (last)
    g_hash_table_remove(registry, b->key);
  g_mutex_unlock(&registry_lock);
  if (last)
    broker_free(b);
  g_free(l);
}

gboolean
gst_pp_mqtt_link_connected(GstPpMqttLink *l)
{
  Broker *b = l->broker;
  g_mutex_lock(&b->lock);
  const gboolean up = b->connected;
  g_mutex_unlock(&b->lock);
  return up;
}

/* Waits, under the broker's lock, up to timeout_ms for `settled`. */
static void
wait_for(GstPpMqttLink *l, gboolean (*settled)(const GstPpMqttLink *), guint timeout_ms)
{
  const gint64 until = g_get_monotonic_time() + (gint64) timeout_ms * 1000;
  while (!settled(l) && g_cond_wait_until(&l->broker->changed, &l->broker->lock, until))
    ;
}

static gboolean
is_connected(const GstPpMqttLink *l)
{
  return l->broker->connected;
}

static gboolean
all_done(const GstPpMqttLink *l)
{
  return l->done >= l->handed;
}

gboolean
gst_pp_mqtt_link_wait_connected(GstPpMqttLink *l, guint timeout_ms)
{
  g_mutex_lock(&l->broker->lock);
  wait_for(l, is_connected, timeout_ms);
  const gboolean up = l->broker->connected;
  g_mutex_unlock(&l->broker->lock);
  return up;
}

gboolean
gst_pp_mqtt_link_publish(GstPpMqttLink *l, const char *topic, const void *payload, gsize size,
                         int qos, const char **reason)
{
  Broker *b = l->broker;
  g_mutex_lock(&b->lock);
  const gboolean up = b->connected;
  *reason = b->last_reason ? b->last_reason : "not connected";
  g_mutex_unlock(&b->lock);
  if (!up)
    return FALSE;
  /* Not under the lock: libmosquitto's thread may call on_publish meanwhile. */
  int mid = 0;
  const int rc = mosquitto_publish(b->mosq, &mid, topic, (int) size, payload, qos, false);
  if (rc != MOSQ_ERR_SUCCESS) {
    *reason = mosquitto_strerror(rc);
    return FALSE;
  }
  g_mutex_lock(&b->lock);
  l->handed++;
  if (g_hash_table_remove(b->early, GINT_TO_POINTER(mid)))
    l->done++;
  else
    g_hash_table_insert(b->owners, GINT_TO_POINTER(mid), l);
  g_cond_broadcast(&b->changed);
  g_mutex_unlock(&b->lock);
  return TRUE;
}

guint64
gst_pp_mqtt_link_done(GstPpMqttLink *l)
{
  g_mutex_lock(&l->broker->lock);
  const guint64 done = l->done;
  g_mutex_unlock(&l->broker->lock);
  return done;
}

guint64
gst_pp_mqtt_link_flush(GstPpMqttLink *l, guint timeout_ms)
{
  g_mutex_lock(&l->broker->lock);
  wait_for(l, all_done, timeout_ms);
  const guint64 left = l->handed > l->done ? l->handed - l->done : 0;
  g_mutex_unlock(&l->broker->lock);
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
