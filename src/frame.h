/* Builds the pp_frame_layout for a frame format and mapping: how many
 * samples (N) a frame gives, how many inputs each (K), and where each input
 * byte lives. */
#ifndef PP_FRAME_H
#define PP_FRAME_H

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

/* Channels a pixel contributes to X: padding bytes (the x of RGBx) are not
 * inputs. */
uint32_t pp_pixel_channels(pp_pixel_format format);

/* Patches that do not fit whole at the right and bottom edges are left out
 * (like a stride-p convolution without padding): N = ⌊w/p⌋·⌊h/p⌋. */
int pp_layout_for_video(pp_pixel_format format, uint32_t width, uint32_t height,
                        uint32_t row_stride, pp_mapping mapping, uint32_t patch,
                        pp_frame_layout *out, char **msg);

int pp_layout_for_tensor(uint32_t n, uint32_t k, pp_frame_layout *out, char **msg);

#endif
