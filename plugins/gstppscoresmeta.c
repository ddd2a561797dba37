// SPDX-License-Identifier: LGPL-2.1-or-later
/* GstPpScoresMeta: registering the meta, adding it to a frame, and copying
 * it with the frame. */
#include "gstppscoresmeta.h"

GType
gst_pp_scores_meta_api_get_type(void)
{
  static GType type;
  static const gchar *tags[] = { NULL }; /* survives any transformation of the frame */
  if (g_once_init_enter(&type)) {
    const GType api = gst_meta_api_type_register("GstPpScoresMetaAPI", tags);
    g_once_init_leave(&type, api);
  }
  return type;
}

static gboolean
scores_meta_init(GstMeta *meta, gpointer params, GstBuffer *buffer)
{
  (void) params;
  (void) buffer;
  GstPpScoresMeta *m = (GstPpScoresMeta *) meta;
  m->scores = NULL;
  m->n = m->outputs = m->patch_size = m->grid_width = m->grid_height = 0;
  m->layout = GST_PP_SCORES_ROWS;
  return TRUE;
}

static void
scores_meta_free(GstMeta *meta, GstBuffer *buffer)
{
  (void) buffer;
  gst_clear_buffer(&((GstPpScoresMeta *) meta)->scores);
}

/* Copies (tee, make_writable) share the scores; scaling or cropping the
 * frame would make the grid lie about which pixels a score covers, so the
 * meta is dropped then. */
static gboolean
scores_meta_transform(GstBuffer *dest, GstMeta *meta, GstBuffer *buffer, GQuark type, gpointer data)
{
  (void) buffer;
  (void) data;
  if (!GST_META_TRANSFORM_IS_COPY(type))
    return FALSE;
  const GstPpScoresMeta *m = (const GstPpScoresMeta *) meta;
  return gst_buffer_add_pp_scores_meta(dest, m->scores, m->n, m->outputs, m->layout, m->patch_size,
                                       m->grid_width, m->grid_height) != NULL;
}

const GstMetaInfo *
gst_pp_scores_meta_get_info(void)
{
  static const GstMetaInfo *info;
  if (g_once_init_enter(&info)) {
    const GstMetaInfo *registered =
        gst_meta_register(GST_PP_SCORES_META_API_TYPE, "GstPpScoresMeta", sizeof(GstPpScoresMeta),
                          scores_meta_init, scores_meta_free, scores_meta_transform);
    g_once_init_leave(&info, registered);
  }
  return info;
}

GstPpScoresMeta *
gst_buffer_add_pp_scores_meta(GstBuffer *buffer, GstBuffer *scores, guint n, guint outputs,
                              GstPpScoresLayout layout, guint patch_size, guint grid_width,
                              guint grid_height)
{
  g_return_val_if_fail(GST_IS_BUFFER(scores), NULL);
  GstPpScoresMeta *m =
      (GstPpScoresMeta *) gst_buffer_add_meta(buffer, GST_PP_SCORES_META_INFO, NULL);
  if (!m)
    return NULL;
  m->scores = gst_buffer_ref(scores);
  m->n = n;
  m->outputs = outputs;
  m->layout = layout;
  m->patch_size = patch_size;
  m->grid_width = grid_width;
  m->grid_height = grid_height;
  return m;
}
