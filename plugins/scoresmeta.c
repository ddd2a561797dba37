// SPDX-License-Identifier: LGPL-2.1-or-later
/* The scores meta: a GstCustomMeta whose structure ppscores.h documents.
 * The float32 data travels as GBytes over the mapped scores buffer, so the
 * results are shared with the tensors they were written to, not copied. */
#include "scoresmeta.h"

static const gchar *const mapping_names[] = { "rows", "patches", "tensor" };

void
gst_pp_scores_meta_register(void)
{
  static gsize done;
  if (g_once_init_enter(&done)) {
    /* No tags: it survives any transformation that copies metadata; the
     * default transform copies it on copies and drops it otherwise. */
    static const gchar *tags[] = { NULL };
    gst_meta_register_custom(PP_SCORES_META_NAME, tags, NULL, NULL, NULL);
    g_once_init_leave(&done, 1);
  }
}

typedef struct {
  GstBuffer *buffer;
  GstMapInfo map;
} MappedScores;

static void
unmap_scores(gpointer data)
{
  MappedScores *m = data;
  gst_buffer_unmap(m->buffer, &m->map);
  gst_buffer_unref(m->buffer);
  g_free(m);
}

gboolean
gst_pp_buffer_add_scores(GstBuffer *buffer, GstBuffer *scores, guint n, guint outputs,
                         GstPpScoresLayout layout, guint patch_size, guint grid_width,
                         guint grid_height)
{
  g_return_val_if_fail(GST_IS_BUFFER(scores), FALSE);
  g_return_val_if_fail(layout <= GST_PP_SCORES_TENSOR, FALSE);
  MappedScores *m = g_new0(MappedScores, 1);
  m->buffer = gst_buffer_ref(scores);
  if (!gst_buffer_map(m->buffer, &m->map, GST_MAP_READ)) {
    gst_buffer_unref(m->buffer);
    g_free(m);
    return FALSE;
  }
  const gsize size = MIN(m->map.size, (gsize) n * outputs * sizeof(gfloat));
  GBytes *bytes = g_bytes_new_with_free_func(m->map.data, size, unmap_scores, m);
  GstCustomMeta *meta = gst_buffer_add_custom_meta(buffer, PP_SCORES_META_NAME);
  if (!meta) {
    g_bytes_unref(bytes);
    return FALSE;
  }
  gst_structure_set(gst_custom_meta_get_structure(meta), "samples", G_TYPE_UINT, n, "outputs",
                    G_TYPE_UINT, outputs, "dtype", G_TYPE_STRING, "float32", "mapping",
                    G_TYPE_STRING, mapping_names[layout], "patch-size", G_TYPE_UINT, patch_size,
                    "grid-width", G_TYPE_UINT, grid_width, "grid-height", G_TYPE_UINT, grid_height,
                    "data", G_TYPE_BYTES, bytes, NULL);
  g_bytes_unref(bytes);
  return TRUE;
}

gboolean
gst_pp_buffer_read_scores(GstBuffer *buffer, GstPpScores *scores)
{
  const GstStructure *s = pp_scores_meta_get(buffer);
  if (!s)
    return FALSE;
  const gchar *mapping = gst_structure_get_string(s, "mapping");
  if (!mapping || !gst_structure_get_uint(s, "samples", &scores->n) ||
      !gst_structure_get_uint(s, "outputs", &scores->outputs) ||
      !gst_structure_get_uint(s, "patch-size", &scores->patch_size) ||
      !gst_structure_get_uint(s, "grid-width", &scores->grid_width) ||
      !gst_structure_get_uint(s, "grid-height", &scores->grid_height))
    return FALSE;
  guint layout = 0;
  while (layout < G_N_ELEMENTS(mapping_names) && g_strcmp0(mapping, mapping_names[layout]) != 0)
    layout++;
  if (layout == G_N_ELEMENTS(mapping_names))
    return FALSE;
  scores->layout = (GstPpScoresLayout) layout;
  gsize size;
  scores->data = pp_scores_meta_data(s, &size);
  if (size / sizeof(gfloat) < (gsize) scores->n * scores->outputs)
    scores->data = NULL;
  return TRUE;
}
