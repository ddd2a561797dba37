// SPDX-License-Identifier: LGPL-2.1-or-later
/* GstPpScoresMeta: a video frame's MLP results, attached by
 * `cudamlp output=video-meta`, so that any element or appsink downstream
 * has the frame and its scores together (scoreoverlay draws them).
 *
 * The scores are float32, `n` samples × `outputs` values, sample-major:
 * the value of output o for sample i is scores[i * outputs + o]. What a
 * sample covers in the frame:
 *   GST_PP_SCORES_ROWS     sample i is image row i (n = height);
 *   GST_PP_SCORES_PATCHES  sample i is the patch_size × patch_size patch at
 *                          column i % grid_width, row i / grid_width of the
 *                          patch grid (grid_width × grid_height = n); pixels
 *                          right of or below the last whole patch belong to
 *                          none;
 *   GST_PP_SCORES_TENSOR   the frame was other/tensors: sample i is its row i.
 *
 * Reading it from an application, which does not link the plugin (this
 * header is installed as <pingpong/gstppscoresmeta.h>): the
 * struct below, and the API type found by its name once the plugin is
 * loaded:
 *
 *   GType api = g_type_from_name("GstPpScoresMetaAPI");
 *   GstPpScoresMeta *meta = (GstPpScoresMeta *) gst_buffer_get_meta(buffer, api);
 *   GstMapInfo map;
 *   if (meta && gst_buffer_map(meta->scores, &map, GST_MAP_READ)) {
 *     const float *scores = (const float *) map.data;
 *     ...
 *     gst_buffer_unmap(meta->scores, &map);
 *   }
 *
 * The meta holds a reference to `scores`, the buffer cudamlp's results were
 * written to; copying the frame's metadata (tee, make_writable) shares it. */
#ifndef GST_PP_SCORES_META_H
#define GST_PP_SCORES_META_H

#include <gst/gst.h>

G_BEGIN_DECLS

typedef enum {
  GST_PP_SCORES_ROWS,
  GST_PP_SCORES_PATCHES,
  GST_PP_SCORES_TENSOR,
} GstPpScoresLayout;

typedef struct {
  GstMeta meta;
  GstBuffer *scores; /* float32, n × outputs */
  guint n, outputs;
  GstPpScoresLayout layout;
  guint patch_size;              /* patches */
  guint grid_width, grid_height; /* patches: the patch grid; rows: 1 × n */
} GstPpScoresMeta;

#define GST_PP_SCORES_META_API_TYPE (gst_pp_scores_meta_api_get_type())
#define GST_PP_SCORES_META_INFO (gst_pp_scores_meta_get_info())
#define gst_buffer_get_pp_scores_meta(b)                                                           \
  ((GstPpScoresMeta *) gst_buffer_get_meta((b), GST_PP_SCORES_META_API_TYPE))

GType gst_pp_scores_meta_api_get_type(void);
const GstMetaInfo *gst_pp_scores_meta_get_info(void);

/* Attaches `scores` (a reference is taken) with its shape to `buffer`,
 * which must be writable. */
GstPpScoresMeta *gst_buffer_add_pp_scores_meta(GstBuffer *buffer, GstBuffer *scores, guint n,
                                               guint outputs, GstPpScoresLayout layout,
                                               guint patch_size, guint grid_width,
                                               guint grid_height);

G_END_DECLS

#endif
