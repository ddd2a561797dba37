// SPDX-License-Identifier: LGPL-2.1-or-later
/* Builds the pp_frame_layout for a frame format and mapping: how many
 * samples (N) a frame gives, how many inputs each (K), and where each input
 * byte lives. */
#ifndef PP_FRAME_H
#define PP_FRAME_H

#include <stdbool.h>
#include <stdint.h>

#include "frame_layout.h"

typedef enum {
  PP_PIXEL_GRAY8,
  PP_PIXEL_RGB,
  PP_PIXEL_BGR,
  PP_PIXEL_RGBA,
  PP_PIXEL_BGRA,
  PP_PIXEL_RGBX,
  PP_PIXEL_BGRX,
} pp_pixel_format;

typedef enum {
  PP_MAPPING_ROWS,
  PP_MAPPING_PATCHES,
} pp_mapping;

/* What a model sees of a YUV frame: R,G,B (as of the same picture in RGB) or
 * luma alone. */
typedef enum {
  PP_COLOR_RGB,
  PP_COLOR_LUMA,
} pp_color;

/* An 8-bit YUV frame as the caller's video library describes it: where each
 * component's samples are, the chroma subsampling, the matrix (Kr, Kb of
 * BT.601, BT.709, BT.2020, ...) and range, and the planes in memory. */
typedef struct {
  uint32_t width, height;
  uint32_t offset[3], stride[3], step[3]; /* Y, U, V */
  uint32_t xshift, yshift;
  /* Chroma samples sit on the first luma column (row) of the pixels they
   * cover, else at their centre. */
  bool x_cosited, y_cosited;
  double kr, kb;
  bool full_range; /* 0..255, else Y 16..235 and chroma 16..240 */
  uint32_t n_planes;
  pp_plane planes[PP_MAX_PLANES]; /* plane 0 holds Y */
  size_t frame_bytes;
} pp_yuv_frame;

/* YUV frames are read this wide at most (the GPU's per-input table packs x
 * into 15 bits). */
#define PP_YUV_MAX_WIDTH 32768u

/* Channels a pixel contributes to X: padding bytes (the x of RGBx) are not
 * inputs. */
uint32_t pp_pixel_channels(pp_pixel_format format);

/* Patches that do not fit whole at the right and bottom edges are left out
 * (like a stride-p convolution without padding): N = ⌊w/p⌋·⌊h/p⌋. */
int pp_layout_for_video(pp_pixel_format format, uint32_t width, uint32_t height,
                        uint32_t row_stride, pp_mapping mapping, uint32_t patch,
                        pp_frame_layout *out, char **msg);

/* With PP_COLOR_RGB, K counts three channels per pixel; with PP_COLOR_LUMA
 * one, and a planar frame's chroma planes are not part of the layout's
 * bytes. */
int pp_layout_for_yuv(const pp_yuv_frame *frame, pp_color color, pp_mapping mapping, uint32_t patch,
                      pp_frame_layout *out, char **msg);

int pp_layout_for_tensor(uint32_t n, uint32_t k, pp_frame_layout *out, char **msg);

/* `frames` frames of `one` back to back in one buffer, read as one frame of
 * frames × N samples: a batch of frames as the device holds it. Only where
 * frame f + 1's samples continue frame f's: one plane starting the frame,
 * not read as YUV's colours, its bytes exactly its image rows (or a
 * tensor's floats) and no partial patch row at the bottom. False (and *out
 * untouched) otherwise. */
bool pp_frame_layout_stack(const pp_frame_layout *one, unsigned frames, pp_frame_layout *out);

/* Whether two layouts read the same bytes the same way, field by field. */
bool pp_frame_layout_equal(const pp_frame_layout *a, const pp_frame_layout *b);

#endif
