// SPDX-License-Identifier: LGPL-2.1-or-later
/* Scores drawn over a frame: colormap lookup per grid cell or per pixel,
 * blended per format. */
#include "scoredraw.h"

#include <math.h>

void
gst_pp_score_grid_prepare(GstPpScoreGrid *g)
{
  if (g->layout != GST_PP_SCORES_PATCHES || !g->smooth)
    return;
  /* Pixel x's centre in grid coordinates: a patch's value sits at its
   * centre, so between centres it is interpolated, outside them held. */
  for (guint x = 0; x < g->width; x++) {
    const gfloat gx = ((gfloat) x + 0.5f) / g->patch - 0.5f;
    const gfloat clamped = CLAMP(gx, 0.0f, (gfloat) g->grid_w - 1);
    const guint c0 = (guint) clamped;
    g->col0[x] = c0;
    g->col1[x] = MIN(c0 + 1, g->grid_w - 1);
    g->col_w[x] = (guint16) lroundf((clamped - c0) * 256);
  }
}

static void
patch_row(const GstPpScoreGrid *g, guint y, guint16 *index)
{
  const guint covered_w = g->grid_w * g->patch, covered_h = g->grid_h * g->patch;
  if (y >= covered_h) {
    for (guint x = 0; x < g->width; x++)
      index[x] = GST_PP_NO_SCORE;
    return;
  }
  if (!g->smooth) {
    const guint8 *cells = g->cell_index + (y / g->patch) * g->grid_w;
    for (guint cx = 0; cx < g->grid_w; cx++)
      for (guint x = cx * g->patch; x < (cx + 1) * g->patch; x++)
        index[x] = cells[cx];
  } else {
    /* Between the two grid rows around this one, then along the row. */
    const gfloat gy = CLAMP(((gfloat) y + 0.5f) / g->patch - 0.5f, 0.0f, (gfloat) g->grid_h - 1);
    const guint r0 = (guint) gy, r1 = MIN(r0 + 1, g->grid_h - 1);
    const gfloat wy = gy - r0;
    const gfloat *a = g->cell_value + r0 * g->grid_w, *b = g->cell_value + r1 * g->grid_w;
    for (guint cx = 0; cx < g->grid_w; cx++)
      g->scratch[cx] = (gint32) lroundf((a[cx] + (b[cx] - a[cx]) * wy) * 256);
    for (guint x = 0; x < covered_w; x++) {
      const gint32 l = g->scratch[g->col0[x]], r = g->scratch[g->col1[x]];
      const gint32 v = l + (((r - l) * (gint32) g->col_w[x]) >> 8);
      index[x] = (guint16) ((v + 128) >> 8);
    }
  }
  for (guint x = covered_w; x < g->width; x++)
    index[x] = GST_PP_NO_SCORE;
}

void
gst_pp_score_grid_row(const GstPpScoreGrid *g, guint y, guint16 *index)
{
  if (g->layout == GST_PP_SCORES_PATCHES) {
    patch_row(g, y, index);
    return;
  }
  /* Rows (and anything else): row y's score as a bar at the right edge. */
  const guint bar = MIN(g->bar_width, g->width);
  for (guint x = 0; x < g->width - bar; x++)
    index[x] = GST_PP_NO_SCORE;
  const guint16 value = y < g->grid_h ? g->cell_index[y] : GST_PP_NO_SCORE;
  for (guint x = g->width - bar; x < g->width; x++)
    index[x] = value;
}

/* R, G and B interleaved in one plane (RGBx, BGRA, RGB, ...): one pass. */
static gboolean
packed(const GstVideoFrame *frame)
{
  const GstVideoFormatInfo *f = frame->info.finfo;
  return GST_VIDEO_FORMAT_INFO_N_PLANES(f) == 1 && GST_VIDEO_FORMAT_INFO_PSTRIDE(f, 0) >= 3 &&
         GST_VIDEO_FORMAT_INFO_W_SUB(f, 1) == 0 && GST_VIDEO_FORMAT_INFO_W_SUB(f, 2) == 0;
}

static void
blend_packed_row(GstVideoFrame *frame, guint y, const guint16 *index, const guint8 colour[256][4],
                 guint alpha)
{
  const guint keep = 256 - alpha;
  const gint pstride = GST_VIDEO_FRAME_COMP_PSTRIDE(frame, 0);
  guint8 *row = (guint8 *) GST_VIDEO_FRAME_PLANE_DATA(frame, 0) +
                (gsize) y * GST_VIDEO_FRAME_PLANE_STRIDE(frame, 0);
  const guint o0 = GST_VIDEO_FRAME_COMP_POFFSET(frame, 0);
  const guint o1 = GST_VIDEO_FRAME_COMP_POFFSET(frame, 1);
  const guint o2 = GST_VIDEO_FRAME_COMP_POFFSET(frame, 2);
  const guint w = GST_VIDEO_FRAME_WIDTH(frame);
  for (guint x = 0; x < w; x++, row += pstride) {
    const guint16 i = index[x];
    if (i == GST_PP_NO_SCORE)
      continue;
    row[o0] = (guint8) ((row[o0] * keep + colour[i][0] * alpha + 128) >> 8);
    row[o1] = (guint8) ((row[o1] * keep + colour[i][1] * alpha + 128) >> 8);
    row[o2] = (guint8) ((row[o2] * keep + colour[i][2] * alpha + 128) >> 8);
  }
}

void
gst_pp_blend_row(GstVideoFrame *frame, guint y, const guint16 *index, const guint8 colour[256][4],
                 guint alpha)
{
  if (packed(frame)) {
    blend_packed_row(frame, y, index, colour, alpha);
    return;
  }
  const guint keep = 256 - alpha;
  for (guint comp = 0; comp < 3; comp++) {
    const guint wsub = GST_VIDEO_FORMAT_INFO_W_SUB(frame->info.finfo, comp);
    const guint hsub = GST_VIDEO_FORMAT_INFO_H_SUB(frame->info.finfo, comp);
    if (y & ((1u << hsub) - 1))
      continue;
    const gint pstride = GST_VIDEO_FRAME_COMP_PSTRIDE(frame, comp);
    const guint w = GST_VIDEO_FRAME_COMP_WIDTH(frame, comp);
    guint8 *p = (guint8 *) GST_VIDEO_FRAME_COMP_DATA(frame, comp) +
                (gsize) (y >> hsub) * GST_VIDEO_FRAME_COMP_STRIDE(frame, comp);
    for (guint sx = 0; sx < w; sx++, p += pstride) {
      const guint16 i = index[sx << wsub];
      if (i != GST_PP_NO_SCORE)
        *p = (guint8) ((*p * keep + colour[i][comp] * alpha + 128) >> 8);
    }
  }
}
