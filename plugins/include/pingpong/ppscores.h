// SPDX-License-Identifier: LGPL-2.1-or-later
/* The scores `cudamlp output=video-meta` attaches to each frame, as a
 * GstCustomMeta named "PpScoresMeta": a GstStructure any program reads with
 * GStreamer alone, no library of ours to link. Installed as
 * <pingpong/ppscores.h> (`pkg-config --cflags pingpong`); from Python:
 *
 *   meta = buffer.get_custom_meta("PpScoresMeta")
 *   s = meta.get_structure()
 *   scores = numpy.frombuffer(s.get_value("data").get_data(), numpy.float32)
 *
 * The structure's fields:
 *   samples      guint   the number of samples (n)
 *   outputs      guint   values per sample
 *   dtype        string  "float32"
 *   mapping      string  what a sample covers in the frame:
 *                          "rows"     sample i is image row i (n = height);
 *                          "patches"  sample i is the patch-size square at
 *                                     column i % grid-width, row
 *                                     i / grid-width of the patch grid;
 *                                     pixels right of or below the last
 *                                     whole patch belong to none;
 *                          "tensor"   the frame was other/tensors: sample i
 *                                     is its row i
 *   patch-size   guint   patches: the patch's side in pixels, else 0
 *   grid-width   guint   patches: patches per row; rows, tensor: 1
 *   grid-height  guint   patches: patch rows; rows, tensor: n
 *   data         GBytes  samples × outputs float32, sample-major: output o
 *                        of sample i is data[i * outputs + o]
 *
 * Copies of the frame (tee, make_writable) share it; a transformation that
 * changes the picture's geometry drops it. The helper below is all C needs:
 *
 *   gsize size;
 *   const GstStructure *s = pp_scores_meta_get(buffer);
 *   const float *scores = s ? pp_scores_meta_data(s, &size) : NULL;
 */
#ifndef PP_SCORES_H
#define PP_SCORES_H

#include <gst/gst.h>

#define PP_SCORES_META_NAME "PpScoresMeta"

/* The frame's scores structure, or NULL when it carries none (or the
 * plugin that registers the meta has not been loaded). */
static inline const GstStructure *
pp_scores_meta_get(GstBuffer *buffer)
{
  GstCustomMeta *meta = gst_buffer_get_custom_meta(buffer, PP_SCORES_META_NAME);
  return meta ? gst_custom_meta_get_structure(meta) : NULL;
}

/* The structure's float32 values (samples × outputs) and their size in
 * bytes; NULL when it holds none. Valid while the buffer is. */
static inline const float *
pp_scores_meta_data(const GstStructure *scores, gsize *size)
{
  const GValue *value = gst_structure_get_value(scores, "data");
  GBytes *bytes =
      value && G_VALUE_HOLDS(value, G_TYPE_BYTES) ? (GBytes *) g_value_get_boxed(value) : NULL;
  *size = 0;
  return bytes ? (const float *) g_bytes_get_data(bytes, size) : NULL;
}

#endif
