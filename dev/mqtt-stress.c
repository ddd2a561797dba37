// SPDX-License-Identifier: LGPL-2.1-or-later
/* Many cameras' messages through one libmosquitto connection, as
 * scorepublish's elements share one per broker (plugins/mqttlink.c): S
 * threads each publish a message of B bytes at F Hz (QoS 1, all at the
 * same instant of each period, as a shared backend's completions come),
 * and a subscriber in the same process takes each message's lag from the
 * send time at its start. Prints the lag's p50, p99 and max, and p50 by
 * second of sending, so a backlog that builds, drains or stays shows.
 * dev/mqtt-stress.sh starts the broker and can stall it mid-run.
 *
 *   mqtt-stress PORT STREAMS HZ SECONDS BYTES [SEND_MAXIMUM (4096)] */
#include <mosquitto.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static struct mosquitto *pub;
static int streams, hz, seconds, bytes;
static long long start_us;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static double *lags_ms;
static int *second_of;
static long received, expected;

static long long
now_us(void)
{
  struct timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  return t.tv_sec * 1000000LL + t.tv_nsec / 1000;
}

static void
on_message(struct mosquitto *m, void *data, const struct mosquitto_message *msg)
{
  (void) m, (void) data;
  const long long sent = strtoll(msg->payload, NULL, 10), at = now_us();
  pthread_mutex_lock(&lock);
  if (received < expected) {
    lags_ms[received] = (at - sent) / 1000.0;
    second_of[received] = (int) ((sent - start_us) / 1000000);
    received++;
  }
  pthread_mutex_unlock(&lock);
}

static void *
camera(void *arg)
{
  const long cam = (long) arg;
  char topic[64], *payload = malloc(bytes);
  memset(payload, 'x', bytes);
  snprintf(topic, sizeof topic, "pingpong/cam%ld/scores", cam);
  const long long period = 1000000 / hz;
  for (int n = 0; n < hz * seconds; n++) {
    const long long wait = start_us + n * period - now_us();
    if (wait > 0)
      usleep(wait);
    const int len = snprintf(payload, bytes, "%lld ", now_us());
    payload[len] = 'x';
    if (mosquitto_publish(pub, NULL, topic, bytes, payload, 1, false) != MOSQ_ERR_SUCCESS)
      fprintf(stderr, "cam%ld: publish failed\n", cam);
  }
  free(payload);
  return NULL;
}

static int
cmp(const void *a, const void *b)
{
  const double x = *(const double *) a, y = *(const double *) b;
  return (x > y) - (x < y);
}

static struct mosquitto *
client(const char *id, int port, int send_maximum)
{
  struct mosquitto *m = mosquitto_new(id, true, NULL);
  if (!m || mosquitto_int_option(m, MOSQ_OPT_TCP_NODELAY, 1) ||
      mosquitto_int_option(m, MOSQ_OPT_SEND_MAXIMUM, send_maximum) ||
      mosquitto_connect(m, "127.0.0.1", port, 10) || mosquitto_loop_start(m)) {
    fprintf(stderr, "mqtt-stress: no broker on port %d\n", port);
    exit(1);
  }
  return m;
}

int
main(int argc, char **argv)
{
  if (argc < 6) {
    fprintf(stderr, "usage: mqtt-stress PORT STREAMS HZ SECONDS BYTES [SEND_MAXIMUM]\n");
    return 2;
  }
  const int port = atoi(argv[1]), send_maximum = argc > 6 ? atoi(argv[6]) : 4096;
  streams = atoi(argv[2]), hz = atoi(argv[3]), seconds = atoi(argv[4]), bytes = atoi(argv[5]);
  if (streams < 1 || hz < 1 || seconds < 1 || bytes < 32) {
    fprintf(stderr, "mqtt-stress: streams, hz and seconds at least 1, bytes at least 32\n");
    return 2;
  }
  expected = (long) streams * hz * seconds;
  lags_ms = calloc(expected, sizeof *lags_ms);
  second_of = calloc(expected, sizeof *second_of);
  mosquitto_lib_init();
  struct mosquitto *sub = client("mqtt-stress-sub", port, send_maximum);
  mosquitto_message_callback_set(sub, on_message);
  mosquitto_subscribe(sub, NULL, "pingpong/#", 1);
  pub = client("mqtt-stress-pub", port, send_maximum);
  sleep(1);
  start_us = now_us() + 100000;
  pthread_t *threads = calloc(streams, sizeof *threads);
  for (long i = 0; i < streams; i++)
    pthread_create(&threads[i], NULL, camera, (void *) i);
  for (int i = 0; i < streams; i++)
    pthread_join(threads[i], NULL);
  for (int waited = 0; waited < 100 && received < expected; waited++)
    usleep(100000);

  pthread_mutex_lock(&lock);
  const long n = received;
  printf("messages %ld of %ld (%d streams at %d Hz, %d bytes, send maximum %d)\n", n, expected,
         streams, hz, bytes, send_maximum);
  printf("lag p50 by second:");
  for (int s = 0; s < seconds; s++) {
    long k = 0;
    double *in = malloc(sizeof *in * (n ? n : 1));
    for (long i = 0; i < n; i++)
      if (second_of[i] == s)
        in[k++] = lags_ms[i];
    qsort(in, k, sizeof *in, cmp);
    printf(" %.1f", k ? in[k / 2] : -1.0);
    free(in);
  }
  qsort(lags_ms, n, sizeof *lags_ms, cmp);
  if (n)
    printf(" ms\nlag ms: p50 %.2f, p99 %.2f, max %.2f\n", lags_ms[n / 2], lags_ms[n * 99 / 100],
           lags_ms[n - 1]);
  pthread_mutex_unlock(&lock);
  mosquitto_disconnect(pub);
  mosquitto_disconnect(sub);
  mosquitto_loop_stop(pub, false);
  mosquitto_loop_stop(sub, false);
  return n == expected ? 0 : 1;
}
