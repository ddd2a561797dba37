#include "tensorcaps.h"

#include <gst/video/video.h>

static gboolean
pixel_format(GstVideoFormat format, pp_pixel_format *out)
{
  switch (format) {
    case GST_VIDEO_FORMAT_GRAY8:
      *out = PP_PIXEL_GRAY8;
      return TRUE;
    case GST_VIDEO_FORMAT_RGB:
      *out = PP_PIXEL_RGB;
      return TRUE;
    case GST_VIDEO_FORMAT_BGR:
      *out = PP_PIXEL_BGR;
      return TRUE;
    case GST_VIDEO_FORMAT_RGBA:
      *out = PP_PIXEL_RGBA;
      return TRUE;
    case GST_VIDEO_FORMAT_BGRA:
      *out = PP_PIXEL_BGRA;
      return TRUE;
    case GST_VIDEO_FORMAT_RGBx:
      *out = PP_PIXEL_RGBX;
      return TRUE;
    case GST_VIDEO_FORMAT_BGRx:
      *out = PP_PIXEL_BGRX;
      return TRUE;
    default:
      return FALSE;
  }
}

gboolean
pp_parse_tensor_dimensions(const gchar *dims, guint *k, guint *n)
{
  g_auto(GStrv) parts = g_strsplit(dims, ":", -1);
  const guint rank = g_strv_length(parts);
  guint64 rows = 1;
  if (rank < 1 || rank > 16)
    return FALSE;
  for (guint i = 0; i < rank; i++) {
    guint64 value;
    if (!g_ascii_string_to_unsigned(g_strstrip(parts[i]), 10, 1, G_MAXUINT32, &value, NULL))
      return FALSE;
    if (i == 0)
      *k = value;
    else
      rows *= value;
    if (rows > G_MAXUINT32)
      return FALSE;
  }
  *n = rows;
  return TRUE;
}

static gboolean
tensor_layout(const GstStructure *s, pp_frame_layout *layout, gchar **msg)
{
  const gchar *types = gst_structure_get_string(s, "types");
  const gchar *dims = gst_structure_get_string(s, "dimensions");
  gint num_tensors = 1;
  guint k, n;
  gst_structure_get_int(s, "num_tensors", &num_tensors);
  if (num_tensors != 1) {
    *msg = g_strdup_printf("%d tensors per buffer; cudamlp takes exactly one", num_tensors);
    return FALSE;
  }
  if (g_strcmp0(types, "float32") != 0) {
    *msg = g_strdup_printf("tensor type '%s'; cudamlp takes float32", types ? types : "(none)");
    return FALSE;
  }
  if (!dims || !pp_parse_tensor_dimensions(dims, &k, &n)) {
    *msg = g_strdup_printf("tensor dimensions '%s' are not K:N[:1:1] positive integers",
                           dims ? dims : "(none)");
    return FALSE;
  }
  return pp_layout_for_tensor(n, k, layout, msg) == 0;
}

gboolean
pp_caps_to_layout(GstCaps *caps, pp_mapping mapping, guint patch, pp_frame_layout *layout,
                  gint *fps_n, gint *fps_d, gchar **msg)
{
  if (!gst_caps_is_fixed(caps)) {
    *msg = g_strdup("caps are not fixed");
    return FALSE;
  }
  const GstStructure *s = gst_caps_get_structure(caps, 0);
  *fps_n = 0;
  *fps_d = 1;
  gst_structure_get_fraction(s, "framerate", fps_n, fps_d);

  if (gst_structure_has_name(s, "other/tensors"))
    return tensor_layout(s, layout, msg);

  GstVideoInfo info;
  pp_pixel_format format;
  if (!gst_video_info_from_caps(&info, caps)) {
    *msg = g_strdup("incomplete video caps");
    return FALSE;
  }
  if (!pixel_format(GST_VIDEO_INFO_FORMAT(&info), &format)) {
    *msg = g_strdup_printf("video format %s is not one of " PP_VIDEO_FORMATS,
                           gst_video_format_to_string(GST_VIDEO_INFO_FORMAT(&info)));
    return FALSE;
  }
  if (pp_layout_for_video(format, GST_VIDEO_INFO_WIDTH(&info), GST_VIDEO_INFO_HEIGHT(&info),
                          GST_VIDEO_INFO_PLANE_STRIDE(&info, 0), mapping, patch, layout, msg) < 0)
    return FALSE;
  /* GstVideoInfo's size is what a default-strided frame of these caps holds. */
  layout->frame_bytes = GST_VIDEO_INFO_SIZE(&info);
  return TRUE;
}

GstCaps *
pp_caps_for_outputs(guint outputs, guint n, gint fps_n, gint fps_d)
{
  g_autofree gchar *dims = g_strdup_printf("%u:%u:1:1", outputs, n);
  return gst_caps_new_simple("other/tensors", "format", G_TYPE_STRING, "static", "num_tensors",
                             G_TYPE_INT, 1, "types", G_TYPE_STRING, "float32", "dimensions",
                             G_TYPE_STRING, dims, "framerate", GST_TYPE_FRACTION, fps_n, fps_d,
                             NULL);
}
