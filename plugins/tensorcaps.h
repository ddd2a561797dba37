/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Caps <-> frame layout: what cudamlp accepts (raw video, or NNStreamer's
 * other/tensors float32) and what it produces (other/tensors float32). */
#ifndef GST_PP_TENSOR_CAPS_H
#define GST_PP_TENSOR_CAPS_H

#include <gst/gst.h>

#include "frame.h"

G_BEGIN_DECLS

/* YUV formats go in as they are: converted to R,G,B (or read as luma) in
 * the kernels' loads. */
#define PP_YUV_FORMATS "NV12, NV21, I420, YV12, YUY2, UYVY"
#define PP_VIDEO_FORMATS "{ GRAY8, RGB, BGR, RGBA, BGRA, RGBx, BGRx, " PP_YUV_FORMATS " }"
/* What color=luma reads: the Y plane, or GRAY8 as it is. */
#define PP_LUMA_FORMATS "{ GRAY8, " PP_YUV_FORMATS " }"

#define PP_VIDEO_CAPS(features, formats)                                                           \
  "video/x-raw" features ", format = (string) " formats ", width = (int) [ 1, MAX ], "             \
  "height = (int) [ 1, MAX ], framerate = (fraction) [ 0/1, MAX ]"
#define PP_TENSOR_SINK_CAPS                                                                        \
  "other/tensors, format = (string) static, num_tensors = (int) 1, types = (string) float32, "     \
  "framerate = (fraction) [ 0/1, MAX ]"

#ifdef PP_HAVE_GST_CUDA
#define PP_CUDA_MEMORY_CAPS(formats) PP_VIDEO_CAPS("(memory:CUDAMemory)", formats) "; "
#else
#define PP_CUDA_MEMORY_CAPS(formats) ""
#endif

// clang-format off: clang-format 14 does not settle on these concatenations
#define PP_SYSTEM_SINK_CAPS PP_VIDEO_CAPS("", PP_VIDEO_FORMATS) "; " PP_TENSOR_SINK_CAPS
#define PP_SINK_CAPS PP_CUDA_MEMORY_CAPS(PP_VIDEO_FORMATS) PP_SYSTEM_SINK_CAPS
// clang-format on

/* What the sink pad takes now: frames in CUDA memory only when they can be
 * read there, RGB formats only when the model sees colour. */
GstCaps *pp_sink_caps(gboolean cuda_memory, pp_color color);

#define PP_SRC_CAPS                                                                                \
  "other/tensors, format = (string) static, num_tensors = (int) 1, types = (string) float32, "     \
  "framerate = (fraction) [ 0/1, MAX ]"

/* Fills `layout` for frames of `caps`; on failure *msg says why (free it). */
gboolean pp_caps_to_layout(GstCaps *caps, pp_mapping mapping, guint patch, pp_color color,
                           pp_frame_layout *layout, gint *fps_n, gint *fps_d, gchar **msg);

/* Whether `caps` carry frames in CUDA memory. */
gboolean pp_caps_are_cuda_memory(GstCaps *caps);

/* `caps` narrowed to the frames whose X has `k` columns, as a model file
 * with k inputs needs: formats with the right number of channels (for
 * patches, k = p·p·channels), and for rows the width k / channels. Tensor
 * caps pass as they are. */
GstCaps *pp_caps_for_inputs(GstCaps *caps, guint k, pp_mapping mapping, guint patch,
                            pp_color color);

/* other/tensors caps for N rows of O float32 outputs: dimensions=O:N:1:1. */
GstCaps *pp_caps_for_outputs(guint outputs, guint n, gint fps_n, gint fps_d);

/* `caps` with video frames at least `width`×`height` (a whole patch). */
GstCaps *pp_caps_at_least(GstCaps *caps, guint width, guint height);

/* Parses NNStreamer's "d0:d1:..." (innermost first) into K and N: K = d0
 * and N = d1·d2·… (K:N), or, where want_k is the product of the innermost
 * few (C:W:H:N, an image per sample), K = want_k and N the product of the
 * rest; `grouped` says how many dimensions K took. FALSE if malformed. */
gboolean pp_parse_tensor_dimensions(const gchar *dims, guint want_k, guint *k, guint *n,
                                    guint *grouped);

/* The layout of float32 other/tensors caps' structure `s`, K read for a
 * model of K = want_k (0: the first dimension). */
gboolean pp_tensor_layout(const GstStructure *s, guint want_k, pp_frame_layout *layout,
                          guint *grouped, gchar **msg);

G_END_DECLS

#endif
