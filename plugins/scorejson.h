// SPDX-License-Identifier: LGPL-2.1-or-later
/* One frame's scores as the JSON message scorepublish sends: the stream's
 * name, the frame's number and timestamp, the shape, summary statistics,
 * the cells above a threshold and, if asked, every score as base64 of its
 * float32 bytes. Plain GLib and json-glib: tested without a pipeline. */
#ifndef GST_PP_SCORE_JSON_H
#define GST_PP_SCORE_JSON_H

#include <glib.h>

G_BEGIN_DECLS

/* A frame's scores: samples × outputs float32, sample-major, and where a
 * sample lies (mapping "rows", "patches" or "tensor"; patches: the grid). */
typedef struct {
  const float *data;
  guint samples, outputs;
  const char *mapping;
  guint grid_width, grid_height;
} GstPpScoreFrame;

typedef struct {
  const char *stream;
  guint64 frame;          /* counted from 0 at start */
  guint64 pts;            /* ns; GST_CLOCK_TIME_NONE: null */
  double threshold;       /* cells with a score above it are listed */
  guint max_cells;        /* at most this many of them ("above-count" counts all) */
  gboolean grid;          /* every score, base64 of the float32 bytes */
  guint64 missing_before; /* frames missing just before this one (0: none said) */
} GstPpScoreMessage;

/* The message as one line of JSON (no newline); g_free it. */
gchar *gst_pp_score_json(const GstPpScoreMessage *m, const GstPpScoreFrame *f);

G_END_DECLS

#endif
