/* Caps <-> frame layout: what cudamlp accepts (raw video, or NNStreamer's
 * other/tensors float32) and what it produces (other/tensors float32). */
#ifndef GST_PP_TENSOR_CAPS_H
#define GST_PP_TENSOR_CAPS_H

#include <gst/gst.h>

#include "frame.h"

G_BEGIN_DECLS

#define PP_VIDEO_FORMATS "{ GRAY8, RGB, BGR, RGBA, BGRA, RGBx, BGRx }"

#define PP_SINK_CAPS                                                                               \
  "video/x-raw, format = (string) " PP_VIDEO_FORMATS ", width = (int) [ 1, MAX ], "                \
  "height = (int) [ 1, MAX ], framerate = (fraction) [ 0/1, MAX ]; "                               \
  "other/tensors, format = (string) static, num_tensors = (int) 1, types = (string) float32, "     \
  "framerate = (fraction) [ 0/1, MAX ]"

#define PP_SRC_CAPS                                                                                \
  "other/tensors, format = (string) static, num_tensors = (int) 1, types = (string) float32, "     \
  "framerate = (fraction) [ 0/1, MAX ]"

/* Fills `layout` for frames of `caps`; on failure *msg says why (free it). */
gboolean pp_caps_to_layout(GstCaps *caps, pp_mapping mapping, guint patch, pp_frame_layout *layout,
                           gint *fps_n, gint *fps_d, gchar **msg);

/* other/tensors caps for N rows of O float32 outputs: dimensions=O:N:1:1. */
GstCaps *pp_caps_for_outputs(guint outputs, guint n, gint fps_n, gint fps_d);

/* Parses NNStreamer's "d0:d1:..." (innermost first) into K = d0 and
 * N = d1·d2·…; FALSE if malformed. */
gboolean pp_parse_tensor_dimensions(const gchar *dims, guint *k, guint *n);

G_END_DECLS

#endif
