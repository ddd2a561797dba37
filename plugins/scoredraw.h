// SPDX-License-Identifier: LGPL-2.1-or-later
/* Drawing scores over a frame: which colormap entry each pixel gets (from
 * a PpScoresMeta's grid), and blending those colours into the frame's
 * components, whatever its format's planes and subsampling. Plain loops
 * over rows, so scoreoverlay keeps up with 1080p60 on one core
 * (docs/PERFORMANCE.md). */
#ifndef GST_PP_SCORE_DRAW_H
#define GST_PP_SCORE_DRAW_H

#include <gst/video/video.h>

#include "scoresmeta.h"

/* A pixel no score covers. */
#define GST_PP_NO_SCORE 0xFFFF

typedef struct {
  /* From the meta and the frame. */
  GstPpScoresLayout layout;
  guint width, height;         /* the frame */
  guint patch, grid_w, grid_h; /* patches */
  guint bar_width;             /* rows: the bar at the right edge */
  gboolean smooth;             /* patches: bilinear between patch centres */
  const guint8 *cell_index;    /* nearest: colormap index per sample */
  const gfloat *cell_value;    /* smooth: the sample's value scaled to 0..255 */
  /* Per column, for smooth: the two grid columns around it and the weight
   * of the right one, 0..256 (width entries each; the caller allocates).
   * Integer arithmetic per pixel, faster than floats here. */
  guint16 *col0, *col1, *col_w;
  gint32 *scratch; /* grid_w values × 256 */
} GstPpScoreGrid;

/* Fills col0/col1/col_w for a smooth grid. */
void gst_pp_score_grid_prepare(GstPpScoreGrid *grid);

/* The colormap index of each pixel of image row y (GST_PP_NO_SCORE where
 * none): width entries. */
void gst_pp_score_grid_row(const GstPpScoreGrid *grid, guint y, guint16 *index);

/* Blends colour[index][c] into component c (0..2: R,G,B or Y,U,V) of image
 * row y for every pixel whose index is set, with weight alpha/256. A
 * subsampled component takes the index of the first pixel its sample
 * covers, on the first image row it covers. */
void gst_pp_blend_row(GstVideoFrame *frame, guint y, const guint16 *index,
                      const guint8 colour[256][4], guint alpha);

#endif
