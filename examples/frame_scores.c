// SPDX-License-Identifier: LGPL-2.1-or-later
/* Each frame of a video with its scores, in C: the same pipeline and the
 * same lines as frame_scores.py, reading the frame's PpScoresMeta through
 * the installed header alone (no library of ours to link):
 *
 *   cc frame_scores.c -o frame_scores $(pkg-config --cflags --libs pingpong gstreamer-app-1.0)
 *   ./frame_scores clip.mp4 model.safetensors [patch-size]
 *   ./frame_scores videotestsrc model.safetensors [patch-size [frames [backend]]]
 */
#include <gst/app/gstappsink.h>
#include <gst/gst.h>
#include <pingpong/ppscores.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One line per frame: its scores' grid, mean and highest patch. */
static gboolean
print_frame(GstSample *sample, guint index)
{
  GstBuffer *buffer = gst_sample_get_buffer(sample);
  const GstStructure *meta = pp_scores_meta_get(buffer);
  guint outputs = 0, grid_width = 0, grid_height = 0;
  gsize size = 0;
  const float *scores = meta ? pp_scores_meta_data(meta, &size) : NULL;
  if (!scores || !gst_structure_get_uint(meta, "outputs", &outputs) ||
      !gst_structure_get_uint(meta, "grid-width", &grid_width) ||
      !gst_structure_get_uint(meta, "grid-height", &grid_height) || outputs == 0 ||
      size < (gsize) grid_width * grid_height * outputs * sizeof(float)) {
    fprintf(stderr, "frame_scores: frame %u carries no scores\n", index);
    return FALSE;
  }
  const GstStructure *video = gst_caps_get_structure(gst_sample_get_caps(sample), 0);
  gint width = 0, height = 0;
  gst_structure_get_int(video, "width", &width);
  gst_structure_get_int(video, "height", &height);
  double sum = 0;
  guint best = 0;
  const guint n = grid_width * grid_height;
  for (guint i = 0; i < n; i++) {
    sum += scores[(gsize) i * outputs];
    if (scores[(gsize) i * outputs] > scores[(gsize) best * outputs])
      best = i;
  }
  printf("frame %u at %.3f s: %dx%d, %ux%u patches, mean %.6f, highest %.6f at (%u, %u)\n", index,
         (double) GST_BUFFER_PTS(buffer) / GST_SECOND, width, height, grid_width, grid_height,
         sum / n, scores[(gsize) best * outputs], best % grid_width, best / grid_width);
  return TRUE;
}

int
main(int argc, char **argv)
{
  gst_init(&argc, &argv);
  if (argc < 3) {
    fprintf(stderr, "usage: %s CLIP|videotestsrc MODEL [PATCH_SIZE [FRAMES [BACKEND]]]\n", argv[0]);
    return 2;
  }
  const gboolean test = strcmp(argv[1], "videotestsrc") == 0;
  const int patch = argc > 3 ? atoi(argv[3]) : 16, frames = argc > 4 ? atoi(argv[4]) : 30;
  const char *backend = argc > 5 ? argv[5] : "auto";
  gchar *source = test ? g_strdup_printf("videotestsrc num-buffers=%d pattern=smpte ! "
                                         "video/x-raw,width=320,height=240",
                                         frames)
                       : g_strdup("filesrc name=src ! decodebin");
  gchar *description = g_strdup_printf(
      "%s ! videoconvert ! video/x-raw,format=RGB ! cudamlp name=mlp backend=%s "
      "output=video-meta mapping=patches patch-size=%d ! appsink name=out sync=false",
      source, backend, patch);
  GError *error = NULL;
  GstElement *pipeline = gst_parse_launch(description, &error);
  g_free(source);
  g_free(description);
  if (!pipeline) {
    fprintf(stderr, "frame_scores: %s\n", error->message);
    g_error_free(error);
    return 1;
  }
  if (!test) {
    GstElement *src = gst_bin_get_by_name(GST_BIN(pipeline), "src");
    g_object_set(src, "location", argv[1], NULL);
    gst_object_unref(src);
  }
  GstElement *mlp = gst_bin_get_by_name(GST_BIN(pipeline), "mlp");
  g_object_set(mlp, "model", argv[2], NULL);
  gst_object_unref(mlp);
  GstAppSink *sink = GST_APP_SINK(gst_bin_get_by_name(GST_BIN(pipeline), "out"));
  GstBus *bus = gst_element_get_bus(pipeline);
  gst_element_set_state(pipeline, GST_STATE_PLAYING);

  int status = 0;
  guint index = 0;
  while (status == 0 && !gst_app_sink_is_eos(sink)) {
    GstSample *sample = gst_app_sink_try_pull_sample(sink, GST_SECOND / 10);
    if (sample) {
      status = print_frame(sample, index++) ? 0 : 1;
      gst_sample_unref(sample);
      continue;
    }
    GstMessage *msg = gst_bus_pop_filtered(bus, GST_MESSAGE_ERROR);
    if (msg) {
      gst_message_parse_error(msg, &error, NULL);
      fprintf(stderr, "frame_scores: %s: %s\n", GST_OBJECT_NAME(GST_MESSAGE_SRC(msg)),
              error->message);
      g_error_free(error);
      gst_message_unref(msg);
      status = 1;
    }
  }
  gst_element_set_state(pipeline, GST_STATE_NULL);
  gst_object_unref(bus);
  gst_object_unref(sink);
  gst_object_unref(pipeline);
  return status;
}
