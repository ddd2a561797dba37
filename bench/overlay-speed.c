// SPDX-License-Identifier: LGPL-2.1-or-later
/* scoreoverlay's drawing alone, on one core: a 1920×1080 frame of each
 * format, a 16×16 patch grid of scores, drawn FRAMES times as a grid and
 * smoothed; prints the median time per frame. What the element adds per
 * frame on top is a map of the scores and their scaling (8160 floats).
 *
 *   build/bench/overlay-speed [FRAMES]
 */
#include <glib.h>
#include <gst/gst.h>
#include <gst/video/video.h>
#include <stdio.h>
#include <stdlib.h>

#include "scoredraw.h"
#include "timing.h"

enum { W = 1920, H = 1080, P = 16 };

static double
draw_once(GstVideoFrame *frame, GstPpScoreGrid *grid, guint16 *index, const guint8 colour[256][4])
{
  const gint64 start = g_get_monotonic_time();
  gint filled_for = -1;
  for (guint y = 0; y < H; y++) {
    const gint key = grid->smooth ? (gint) y : (gint) MIN(y / P, grid->grid_h);
    if (key != filled_for) {
      gst_pp_score_grid_row(grid, y, index);
      filled_for = key;
    }
    gst_pp_blend_row(frame, y, index, colour, 128);
  }
  return (g_get_monotonic_time() - start) / 1000.0;
}

int
main(int argc, char **argv)
{
  gst_init(&argc, &argv);
  const int frames = argc > 1 ? atoi(argv[1]) : 200;
  const guint gw = W / P, gh = H / P, n = gw * gh;
  guint8 *cell_index = g_new(guint8, n);
  gfloat *cell_value = g_new(gfloat, n);
  for (guint i = 0; i < n; i++) {
    cell_index[i] = (guint8) (i * 37);
    cell_value[i] = cell_index[i];
  }
  guint8 colour[256][4];
  for (int i = 0; i < 256; i++)
    for (int c = 0; c < 4; c++)
      colour[i][c] = (guint8) (i ^ (c * 85));
  guint16 *index = g_new(guint16, W), *col0 = g_new(guint16, W), *col1 = g_new(guint16, W);
  guint16 *col_w = g_new(guint16, W);
  gint32 *scratch = g_new(gint32, gw);
  const GstVideoFormat formats[] = { GST_VIDEO_FORMAT_I420, GST_VIDEO_FORMAT_NV12,
                                     GST_VIDEO_FORMAT_RGBx, GST_VIDEO_FORMAT_RGB };
  printf("%-6s %-7s %8s  (1920x1080, %d frames, median)\n", "format", "draw", "ms", frames);
  for (guint f = 0; f < G_N_ELEMENTS(formats); f++) {
    GstVideoInfo info;
    gst_video_info_set_format(&info, formats[f], W, H);
    GstBuffer *buffer = gst_buffer_new_allocate(NULL, GST_VIDEO_INFO_SIZE(&info), NULL);
    gst_buffer_memset(buffer, 0, 100, GST_VIDEO_INFO_SIZE(&info));
    GstVideoFrame frame;
    gst_video_frame_map(&frame, &info, buffer, GST_MAP_READWRITE);
    for (int smooth = 0; smooth < 2; smooth++) {
      GstPpScoreGrid grid = { .layout = GST_PP_SCORES_PATCHES,
                              .width = W,
                              .height = H,
                              .patch = P,
                              .grid_w = gw,
                              .grid_h = gh,
                              .smooth = smooth,
                              .cell_index = cell_index,
                              .cell_value = cell_value,
                              .col0 = col0,
                              .col1 = col1,
                              .col_w = col_w,
                              .scratch = scratch };
      gst_pp_score_grid_prepare(&grid);
      double *ms = g_new(double, frames);
      for (int i = 0; i < frames; i++)
        ms[i] = draw_once(&frame, &grid, index, (const guint8(*)[4]) colour);
      printf("%-6s %-7s %8.2f\n", gst_video_format_to_string(formats[f]),
             smooth ? "smooth" : "grid", pp_median(ms, frames));
      g_free(ms);
    }
    gst_video_frame_unmap(&frame);
    gst_buffer_unref(buffer);
  }
  return 0;
}
