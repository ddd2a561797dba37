/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Caps read as frame layouts and written from them, for raw video and
 * NNStreamer's tensors. */
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
pp_parse_tensor_dimensions(const gchar *dims, guint want_k, guint *k, guint *n, guint *grouped)
{
  g_auto(GStrv) parts = g_strsplit(dims, ":", -1);
  const guint rank = g_strv_length(parts);
  guint64 value[16], inner = 1, outer = 1;
  if (rank < 1 || rank > 16)
    return FALSE;
  for (guint i = 0; i < rank; i++)
    if (!g_ascii_string_to_unsigned(g_strstrip(parts[i]), 10, 1, G_MAXUINT32, &value[i], NULL))
      return FALSE;
  /* K is the first dimension, or as many innermost ones as multiply to
   * want_k (NNStreamer's C:W:H:N: an image of C·W·H values per sample). */
  guint j = 1;
  for (guint64 product = value[0]; want_k && product != want_k && j < rank && product < want_k;)
    product *= value[j++];
  for (guint i = 0; i < rank; i++) {
    guint64 *side = i < j ? &inner : &outer;
    *side *= value[i];
    if (*side > G_MAXUINT32)
      return FALSE;
  }
  if (want_k && inner != want_k) {
    j = 1;
    inner = value[0];
    outer = 1;
    for (guint i = 1; i < rank; i++)
      outer *= value[i];
    if (outer > G_MAXUINT32)
      return FALSE;
  }
  *k = (guint) inner;
  *n = (guint) outer;
  *grouped = j;
  return TRUE;
}

gboolean
pp_tensor_layout(const GstStructure *s, guint want_k, pp_frame_layout *layout, guint *grouped,
                 gchar **msg)
{
  const gchar *types = gst_structure_get_string(s, "types");
  const gchar *dims = gst_structure_get_string(s, "dimensions");
  gint num_tensors = 1;
  guint k, n;
  *grouped = 1;
  gst_structure_get_int(s, "num_tensors", &num_tensors);
  if (num_tensors != 1) {
    *msg = g_strdup_printf("%d tensors per buffer; cudamlp takes exactly one", num_tensors);
    return FALSE;
  }
  if (g_strcmp0(types, "float32") != 0) {
    *msg = g_strdup_printf("tensor type '%s'; cudamlp takes float32", types ? types : "(none)");
    return FALSE;
  }
  if (!dims || !pp_parse_tensor_dimensions(dims, want_k, &k, &n, grouped)) {
    *msg = g_strdup_printf("tensor dimensions '%s' are not K:N[:1:1] or C:W:H:N positive "
                           "integers",
                           dims ? dims : "(none)");
    return FALSE;
  }
  return pp_layout_for_tensor(n, k, layout, msg) == 0;
}

static gboolean
is_yuv_format(GstVideoFormat format)
{
  switch (format) {
    case GST_VIDEO_FORMAT_NV12:
    case GST_VIDEO_FORMAT_NV21:
    case GST_VIDEO_FORMAT_I420:
    case GST_VIDEO_FORMAT_YV12:
    case GST_VIDEO_FORMAT_YUY2:
    case GST_VIDEO_FORMAT_UYVY:
      return TRUE;
    default:
      return FALSE;
  }
}

/* Where GstVideoInfo puts each component and plane, and the colorimetry's
 * matrix and range, for the core's YUV reader. */
static gboolean
yuv_layout(const GstVideoInfo *info, pp_mapping mapping, guint patch, pp_color color,
           pp_frame_layout *layout, gchar **msg)
{
  const GstVideoFormatInfo *f = info->finfo;
  const guint width = GST_VIDEO_INFO_WIDTH(info), height = GST_VIDEO_INFO_HEIGHT(info);
  pp_yuv_frame y = {
    .width = width,
    .height = height,
    .xshift = GST_VIDEO_FORMAT_INFO_W_SUB(f, 1),
    .yshift = GST_VIDEO_FORMAT_INFO_H_SUB(f, 1),
    .x_cosited = (info->chroma_site & GST_VIDEO_CHROMA_SITE_H_COSITED) != 0,
    .y_cosited = (info->chroma_site & GST_VIDEO_CHROMA_SITE_V_COSITED) != 0,
    .full_range = info->colorimetry.range == GST_VIDEO_COLOR_RANGE_0_255,
    .n_planes = GST_VIDEO_INFO_N_PLANES(info),
    .frame_bytes = GST_VIDEO_INFO_SIZE(info),
  };
  for (guint c = 0; c < 3; c++) {
    y.offset[c] = GST_VIDEO_INFO_COMP_OFFSET(info, c);
    y.stride[c] = GST_VIDEO_INFO_COMP_STRIDE(info, c);
    y.step[c] = GST_VIDEO_INFO_COMP_PSTRIDE(info, c);
  }
  for (guint p = 0; p < y.n_planes && p < PP_MAX_PLANES; p++) {
    pp_plane *plane = &y.planes[p];
    plane->offset = GST_VIDEO_INFO_PLANE_OFFSET(info, p);
    plane->stride = GST_VIDEO_INFO_PLANE_STRIDE(info, p);
    for (guint c = 0; c < 3; c++) {
      if (GST_VIDEO_FORMAT_INFO_PLANE(f, c) != p)
        continue;
      const guint cols = GST_VIDEO_FORMAT_INFO_SCALE_WIDTH(f, c, width);
      const guint rows = GST_VIDEO_FORMAT_INFO_SCALE_HEIGHT(f, c, height);
      plane->row_bytes = MAX(plane->row_bytes, cols * GST_VIDEO_FORMAT_INFO_PSTRIDE(f, c));
      plane->rows = MAX(plane->rows, rows);
    }
    plane->row_bytes = MIN(plane->row_bytes, plane->stride);
  }
  gdouble kr, kb;
  if (!gst_video_color_matrix_get_Kr_Kb(info->colorimetry.matrix, &kr, &kb)) {
    g_autofree gchar *colorimetry = gst_video_colorimetry_to_string(&info->colorimetry);
    *msg = g_strdup_printf("colorimetry '%s' has no YUV matrix (BT.601, BT.709, BT.2020, ...)",
                           colorimetry ? colorimetry : "unknown");
    return FALSE;
  }
  y.kr = kr;
  y.kb = kb;
  return pp_layout_for_yuv(&y, color, mapping, patch, layout, msg) == 0;
}

gboolean
pp_caps_are_cuda_memory(GstCaps *caps)
{
  GstCapsFeatures *features = gst_caps_get_size(caps) ? gst_caps_get_features(caps, 0) : NULL;
  return features && gst_caps_features_contains(features, "memory:CUDAMemory");
}

GstCaps *
pp_sink_caps(gboolean cuda_memory, pp_color color)
{
  const gchar *system = color == PP_COLOR_LUMA ? PP_VIDEO_CAPS("", PP_LUMA_FORMATS)
                                               : PP_VIDEO_CAPS("", PP_VIDEO_FORMATS);
  const gchar *device = !cuda_memory ? ""
                        : color == PP_COLOR_LUMA
                            ? PP_VIDEO_CAPS("(memory:CUDAMemory)", PP_LUMA_FORMATS) "; "
                            : PP_VIDEO_CAPS("(memory:CUDAMemory)", PP_VIDEO_FORMATS) "; ";
  g_autofree gchar *all = g_strconcat(device, system, "; ", PP_TENSOR_SINK_CAPS, NULL);
  return gst_caps_from_string(all);
}

gboolean
pp_caps_to_layout(GstCaps *caps, pp_mapping mapping, guint patch, pp_color color,
                  pp_frame_layout *layout, gint *fps_n, gint *fps_d, gchar **msg)
{
  if (!gst_caps_is_fixed(caps)) {
    *msg = g_strdup("caps are not fixed");
    return FALSE;
  }
  const GstStructure *s = gst_caps_get_structure(caps, 0);
  *fps_n = 0;
  *fps_d = 1;
  gst_structure_get_fraction(s, "framerate", fps_n, fps_d);

  if (gst_structure_has_name(s, "other/tensors")) {
    guint grouped;
    return pp_tensor_layout(s, 0, layout, &grouped, msg);
  }

  GstVideoInfo info;
  pp_pixel_format format;
  if (!gst_video_info_from_caps(&info, caps)) {
    *msg = g_strdup("incomplete video caps");
    return FALSE;
  }
  if (is_yuv_format(GST_VIDEO_INFO_FORMAT(&info)))
    return yuv_layout(&info, mapping, patch, color, layout, msg);
  if (color == PP_COLOR_LUMA && GST_VIDEO_INFO_FORMAT(&info) != GST_VIDEO_FORMAT_GRAY8) {
    *msg = g_strdup_printf("color=luma reads GRAY8 or YUV frames, not %s; put videoconvert before "
                           "cudamlp",
                           gst_video_format_to_string(GST_VIDEO_INFO_FORMAT(&info)));
    return FALSE;
  }
  if (!pixel_format(GST_VIDEO_INFO_FORMAT(&info), &format)) {
    *msg = g_strdup_printf("video format %s is not one cudamlp reads (" PP_VIDEO_FORMATS
                           "); put videoconvert before cudamlp",
                           gst_video_format_to_string(GST_VIDEO_INFO_FORMAT(&info)));
    return FALSE;
  }
  if (pp_layout_for_video(format, GST_VIDEO_INFO_WIDTH(&info), GST_VIDEO_INFO_HEIGHT(&info),
                          GST_VIDEO_INFO_PLANE_STRIDE(&info, 0), mapping, patch, layout, msg) < 0)
    return FALSE;
  /* GstVideoInfo's size is what a default-strided frame of these caps holds. */
  layout->frame_bytes = GST_VIDEO_INFO_SIZE(&info);
  layout->planes[0].rows = GST_VIDEO_INFO_HEIGHT(&info);
  return TRUE;
}

/* The values a pixel of `format` puts in X: 1 (GRAY8, or YUV as luma), 3 (RGB
 * with or without a padding byte, YUV as R,G,B) or 4 (with alpha). */
static guint
channels_of(GstVideoFormat format, pp_color color)
{
  pp_pixel_format pixel;
  if (is_yuv_format(format))
    return color == PP_COLOR_LUMA ? 1 : 3;
  if (!pixel_format(format, &pixel))
    return 0;
  return format == GST_VIDEO_FORMAT_GRAY8                                     ? 1
         : format == GST_VIDEO_FORMAT_RGBA || format == GST_VIDEO_FORMAT_BGRA ? 4
                                                                              : 3;
}

static gboolean
format_fits(const gchar *name, guint k, pp_mapping mapping, guint patch, pp_color color)
{
  const guint c = channels_of(gst_video_format_from_string(name), color);
  if (c == 0)
    return FALSE;
  return mapping == PP_MAPPING_PATCHES ? (guint64) patch * patch * c == k : k % c == 0;
}

GstCaps *
pp_caps_for_inputs(GstCaps *caps, guint k, pp_mapping mapping, guint patch, pp_color color)
{
  GstCaps *out = gst_caps_new_empty();
  for (guint i = 0; i < gst_caps_get_size(caps); i++) {
    const GstStructure *s = gst_caps_get_structure(caps, i);
    GstCapsFeatures *features = gst_caps_get_features(caps, i);
    if (!gst_structure_has_name(s, "video/x-raw")) {
      gst_caps_append_structure_full(out, gst_structure_copy(s),
                                     features ? gst_caps_features_copy(features) : NULL);
      continue;
    }
    /* One structure per format that fits, so rows can fix each one's width. */
    const GValue *formats = gst_structure_get_value(s, "format");
    const guint n = formats && GST_VALUE_HOLDS_LIST(formats) ? gst_value_list_get_size(formats)
                    : formats                                ? 1
                                                             : 0;
    for (guint f = 0; f < n; f++) {
      const GValue *v =
          GST_VALUE_HOLDS_LIST(formats) ? gst_value_list_get_value(formats, f) : formats;
      if (!G_VALUE_HOLDS_STRING(v) || !format_fits(g_value_get_string(v), k, mapping, patch, color))
        continue;
      GstStructure *fitting = gst_structure_copy(s);
      gst_structure_set_value(fitting, "format", v);
      if (mapping == PP_MAPPING_ROWS) {
        const guint c = channels_of(gst_video_format_from_string(g_value_get_string(v)), color);
        GstStructure *width =
            gst_structure_new("video/x-raw", "width", G_TYPE_INT, (gint) (k / c), NULL);
        if (!gst_structure_can_intersect(fitting, width)) {
          gst_structure_free(width);
          gst_structure_free(fitting);
          continue;
        }
        GstStructure *both = gst_structure_intersect(fitting, width);
        gst_structure_free(width);
        gst_structure_free(fitting);
        fitting = both;
      }
      gst_caps_append_structure_full(out, fitting,
                                     features ? gst_caps_features_copy(features) : NULL);
    }
  }
  return out;
}

GstCaps *
pp_caps_at_least(GstCaps *caps, guint width, guint height)
{
  GstCaps *out = gst_caps_new_empty();
  for (guint i = 0; i < gst_caps_get_size(caps); i++) {
    GstStructure *s = gst_structure_copy(gst_caps_get_structure(caps, i));
    GstCapsFeatures *features = gst_caps_get_features(caps, i);
    if (gst_structure_has_name(s, "video/x-raw"))
      gst_structure_set(s, "width", GST_TYPE_INT_RANGE, (gint) width, G_MAXINT, "height",
                        GST_TYPE_INT_RANGE, (gint) height, G_MAXINT, NULL);
    gst_caps_append_structure_full(out, s, features ? gst_caps_features_copy(features) : NULL);
  }
  return out;
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
