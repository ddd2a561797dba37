/* pp-io-bench: runs one gst-launch description to EOS and prints
 *   <bytes> <seconds> <cpu seconds>
 * timed from PLAYING to EOS in this process, so plugin loading and pipeline
 * construction stay out; CPU is user + system of every thread of the process
 * (io_uring's workers included). tools/io-bench.sh builds the table.
 *
 *   pp-io-bench BYTES 'filesrc location=big ! fakesink sync=false' */
#include <gst/gst.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

static double
cpu_seconds(void)
{
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
         (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

static double
wall_seconds(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

int
main(int argc, char **argv)
{
  gst_init(&argc, &argv);
  if (argc != 3) {
    fprintf(stderr, "usage: %s BYTES PIPELINE\n", argv[0]);
    return 2;
  }
  GError *err = NULL;
  GstElement *pipeline = gst_parse_launch(argv[2], &err);
  if (!pipeline || err) {
    fprintf(stderr, "%s\n", err ? err->message : "no pipeline");
    return 1;
  }
  GstBus *bus = gst_element_get_bus(pipeline);
  const double cpu0 = cpu_seconds(), t0 = wall_seconds();
  gst_element_set_state(pipeline, GST_STATE_PLAYING);
  GstMessage *msg =
      gst_bus_timed_pop_filtered(bus, GST_CLOCK_TIME_NONE, GST_MESSAGE_EOS | GST_MESSAGE_ERROR);
  const double t1 = wall_seconds(), cpu1 = cpu_seconds();
  int rc = 0;
  if (GST_MESSAGE_TYPE(msg) == GST_MESSAGE_ERROR) {
    GError *e = NULL;
    gst_message_parse_error(msg, &e, NULL);
    fprintf(stderr, "%s\n", e->message);
    g_error_free(e);
    rc = 1;
  }
  gst_message_unref(msg);
  gst_element_set_state(pipeline, GST_STATE_NULL);
  gst_object_unref(bus);
  gst_object_unref(pipeline);
  printf("%s %.6f %.6f\n", argv[1], t1 - t0, cpu1 - cpu0);
  return rc;
}
