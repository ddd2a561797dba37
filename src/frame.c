#include "frame.h"

#include <errno.h>
#include <glib.h>
#include <string.h>

static const struct {
  uint32_t channels, pixel_stride;
  uint8_t offsets[4]; /* R,G,B,A (or the single gray channel) */
} pixel_formats[] = {
  [PP_PIXEL_GRAY8] = { 1, 1, { 0 } },         [PP_PIXEL_RGB] = { 3, 3, { 0, 1, 2 } },
  [PP_PIXEL_BGR] = { 3, 3, { 2, 1, 0 } },     [PP_PIXEL_RGBA] = { 4, 4, { 0, 1, 2, 3 } },
  [PP_PIXEL_BGRA] = { 4, 4, { 2, 1, 0, 3 } }, [PP_PIXEL_RGBX] = { 3, 4, { 0, 1, 2 } },
  [PP_PIXEL_BGRX] = { 3, 4, { 2, 1, 0 } },
};

/* X has at most this many elements, so every index fits 32 bits. */
#define MAX_ELEMENTS (1u << 31)

uint32_t
pp_pixel_channels(pp_pixel_format format)
{
  return pixel_formats[format].channels;
}

static int invalid(char **msg, const char *fmt, ...) G_GNUC_PRINTF(2, 3);

static int
invalid(char **msg, const char *fmt, ...)
{
  if (msg) {
    va_list args;
    va_start(args, fmt);
    *msg = g_strdup_vprintf(fmt, args);
    va_end(args);
  }
  return -EINVAL;
}

int
pp_layout_for_video(pp_pixel_format format, uint32_t width, uint32_t height, uint32_t row_stride,
                    pp_mapping mapping, uint32_t patch, pp_frame_layout *out, char **msg)
{
  if ((unsigned) format >= G_N_ELEMENTS(pixel_formats))
    return invalid(msg, "unsupported pixel format %d", format);
  pp_frame_layout l = { 0 };
  l.width = width;
  l.height = height;
  l.channels = pixel_formats[format].channels;
  l.pixel_stride = pixel_formats[format].pixel_stride;
  l.row_stride = row_stride;
  memcpy(l.channel_offset, pixel_formats[format].offsets, sizeof l.channel_offset);
  if (width == 0 || height == 0)
    return invalid(msg, "a %u×%u frame has no pixels", width, height);
  if ((uint64_t) row_stride < (uint64_t) width * l.pixel_stride)
    return invalid(msg, "row stride %u is shorter than a %u-pixel row", row_stride, width);
  l.frame_bytes = (size_t) row_stride * height;

  if (mapping == PP_MAPPING_ROWS) {
    l.kind = PP_LAYOUT_ROWS;
    l.n = height;
    l.k = width * l.channels;
  } else {
    if (patch == 0 || patch > width || patch > height)
      return invalid(msg, "a %u×%u frame holds no whole %u×%u patch", width, height, patch, patch);
    l.kind = PP_LAYOUT_PATCHES;
    l.patch = patch;
    l.patches_per_row = width / patch;
    l.n = l.patches_per_row * (height / patch);
    l.k = patch * patch * l.channels;
  }
  if ((uint64_t) l.n * l.k > MAX_ELEMENTS)
    return invalid(msg, "a frame of %u×%u inputs is too large", l.n, l.k);
  *out = l;
  return 0;
}

int
pp_layout_for_tensor(uint32_t n, uint32_t k, pp_frame_layout *out, char **msg)
{
  if (n == 0 || k == 0)
    return invalid(msg, "a %u×%u tensor is empty", n, k);
  if ((uint64_t) n * k > MAX_ELEMENTS)
    return invalid(msg, "a %u×%u tensor is too large", n, k);
  *out = (pp_frame_layout){
    .kind = PP_LAYOUT_TENSOR,
    .n = n,
    .k = k,
    .frame_bytes = (size_t) n * k * sizeof(float),
  };
  return 0;
}
