// SPDX-License-Identifier: LGPL-2.1-or-later
/* scoreoverlay: draws the PpScoresMeta that `cudamlp output=video-meta`
 * attaches to each frame over that frame, as a heat map (mapping=patches)
 * or a bar at the right edge (mapping=rows). Frames without the meta pass
 * unchanged. */
#ifndef GST_SCORE_OVERLAY_H
#define GST_SCORE_OVERLAY_H

#include <gst/video/gstvideofilter.h>

#include "scoredraw.h"

G_BEGIN_DECLS

#define GST_TYPE_SCORE_OVERLAY (gst_score_overlay_get_type())
G_DECLARE_FINAL_TYPE(GstScoreOverlay, gst_score_overlay, GST, SCORE_OVERLAY, GstVideoFilter)

GST_ELEMENT_REGISTER_DECLARE(scoreoverlay);

typedef enum {
  GST_SCORE_OVERLAY_RANGE_FIXED,
  GST_SCORE_OVERLAY_RANGE_FRAME,
  GST_SCORE_OVERLAY_RANGE_RUNNING,
} GstScoreOverlayRange;

struct _GstScoreOverlay {
  GstVideoFilter parent;

  /* Properties, under the object lock. */
  guint colormap; /* index into gst_pp_colormaps */
  gdouble opacity;
  GstScoreOverlayRange range;
  gdouble min, max;
  guint output_index;
  gboolean smooth;
  guint bar_width;

  /* Streaming thread only. */
  gdouble seen_min, seen_max; /* range=running: since the stream started */
  gboolean seen_any;
  gboolean warned_output;       /* output-index past the meta's outputs, said once */
  guint8 colour[256][4];        /* the colormap in the frame's components */
  guint colour_for;             /* colormap `colour` was made for, G_MAXUINT: none */
  guint16 *index_row;           /* a row's colormap indices, width entries */
  guint8 *cell_index;           /* per sample */
  gfloat *cell_value;           /* per sample, scaled to 0..255 */
  gsize cells;                  /* capacity of the two above */
  guint16 *col0, *col1, *col_w; /* smooth: per column, width entries */
  gint32 *scratch;
  guint scratch_cells;
};

G_END_DECLS

#endif
