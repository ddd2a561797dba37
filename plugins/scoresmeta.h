// SPDX-License-Identifier: LGPL-2.1-or-later
/* The plugin's side of the scores meta (ppscores.h says what a reader
 * sees): registering it, attaching a frame's scores, and reading them back
 * as scoreoverlay draws them. */
#ifndef GST_PP_SCORES_META_H
#define GST_PP_SCORES_META_H

#include <gst/gst.h>

#include "pingpong/ppscores.h"

G_BEGIN_DECLS

typedef enum {
  GST_PP_SCORES_ROWS,
  GST_PP_SCORES_PATCHES,
  GST_PP_SCORES_TENSOR,
} GstPpScoresLayout;

/* A frame's scores as read back: `data` stays valid while the buffer is. */
typedef struct {
  const gfloat *data;
  guint n, outputs;
  GstPpScoresLayout layout;
  guint patch_size;
  guint grid_width, grid_height;
} GstPpScores;

/* Registers the custom meta once; the plugin calls it when it loads. */
void gst_pp_scores_meta_register(void);

/* Attaches `scores` (float32, n × outputs; a reference is taken and its
 * memory mapped for as long as the meta lives) with its shape. */
gboolean gst_pp_buffer_add_scores(GstBuffer *buffer, GstBuffer *scores, guint n, guint outputs,
                                  GstPpScoresLayout layout, guint patch_size, guint grid_width,
                                  guint grid_height);

/* Reads a frame's scores; FALSE when it carries none. `data` is NULL when
 * it holds fewer bytes than its shape says. */
gboolean gst_pp_buffer_read_scores(GstBuffer *buffer, GstPpScores *scores);

G_END_DECLS

#endif
