// SPDX-License-Identifier: LGPL-2.1-or-later
/* Frame layouts: samples, inputs per sample and where each input lies, per
 * format and mapping. */
#include "frame.h"
#include "error.h"

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

/* N and K of a mapping over a width×height picture with `channels` inputs
 * per pixel. */
static int
map_samples(pp_frame_layout *l, pp_mapping mapping, uint32_t patch, char **msg)
{
  const uint32_t width = l->width, height = l->height;
  if (mapping == PP_MAPPING_ROWS) {
    l->kind = PP_LAYOUT_ROWS;
    l->n = height;
    l->k = width * l->channels;
  } else {
    if (patch == 0 || patch > width || patch > height)
      return pp_error(msg, EINVAL, "a %u×%u frame holds no whole %u×%u patch", width, height, patch,
                      patch);
    l->kind = PP_LAYOUT_PATCHES;
    l->patch = patch;
    l->patches_per_row = width / patch;
    l->n = l->patches_per_row * (height / patch);
    l->k = patch * patch * l->channels;
  }
  if ((uint64_t) l->n * l->k > MAX_ELEMENTS)
    return pp_error(msg, EINVAL, "a frame of %u×%u inputs is too large", l->n, l->k);
  return 0;
}

int
pp_layout_for_video(pp_pixel_format format, uint32_t width, uint32_t height, uint32_t row_stride,
                    pp_mapping mapping, uint32_t patch, pp_frame_layout *out, char **msg)
{
  if ((unsigned) format >= G_N_ELEMENTS(pixel_formats))
    return pp_error(msg, EINVAL, "unsupported pixel format %d", format);
  pp_frame_layout l = { 0 };
  l.width = width;
  l.height = height;
  l.channels = pixel_formats[format].channels;
  l.pixel_stride = pixel_formats[format].pixel_stride;
  l.row_stride = row_stride;
  l.scale = 1.0f / 255.0f;
  memcpy(l.channel_offset, pixel_formats[format].offsets, sizeof l.channel_offset);
  if (width == 0 || height == 0)
    return pp_error(msg, EINVAL, "a %u×%u frame has no pixels", width, height);
  if ((uint64_t) row_stride < (uint64_t) width * l.pixel_stride)
    return pp_error(msg, EINVAL, "row stride %u is shorter than a %u-pixel row", row_stride, width);
  l.frame_bytes = (size_t) row_stride * height;
  l.n_planes = 1;
  l.planes[0] = (pp_plane){ 0, row_stride, width * l.pixel_stride, height };
  const int rc = map_samples(&l, mapping, patch, msg);
  if (rc == 0)
    *out = l;
  return rc;
}

/* Byte after the last sample of component c of a w×h picture. */
static uint64_t
component_end(const pp_yuv_frame *f, unsigned c)
{
  const uint32_t xs = c ? f->xshift : 0, ys = c ? f->yshift : 0;
  const uint64_t cols = ((uint64_t) f->width + (1u << xs) - 1) >> xs;
  const uint64_t rows = ((uint64_t) f->height + (1u << ys) - 1) >> ys;
  return f->offset[c] + (rows - 1) * f->stride[c] + (cols - 1) * f->step[c] + 1;
}

int
pp_layout_for_yuv(const pp_yuv_frame *f, pp_color color, pp_mapping mapping, uint32_t patch,
                  pp_frame_layout *out, char **msg)
{
  static const char *const names[3] = { "Y", "U", "V" };
  if (f->width == 0 || f->height == 0)
    return pp_error(msg, EINVAL, "a %u×%u frame has no pixels", f->width, f->height);
  if (f->n_planes == 0 || f->n_planes > PP_MAX_PLANES)
    return pp_error(msg, EINVAL, "a YUV frame of %u planes", f->n_planes);
  if (f->xshift > 2 || f->yshift > 2)
    return pp_error(msg, EINVAL, "chroma subsampled by 2^%u×2^%u is not supported", f->xshift,
                    f->yshift);
  for (unsigned c = 0; c < 3; c++) {
    if (f->step[c] == 0 || f->stride[c] == 0)
      return pp_error(msg, EINVAL, "the %s samples have no stride", names[c]);
    if (component_end(f, c) > f->frame_bytes)
      return pp_error(msg, EINVAL, "the %s samples run past the %zu-byte frame", names[c],
                      f->frame_bytes);
  }
  if (!(f->kr > 0 && f->kb > 0 && f->kr + f->kb < 1))
    return pp_error(msg, EINVAL, "colour matrix Kr=%g, Kb=%g is not a YUV matrix", f->kr, f->kb);

  pp_frame_layout l = { 0 };
  l.width = f->width;
  l.height = f->height;
  const double y_range = f->full_range ? 255.0 : 219.0, c_range = f->full_range ? 255.0 : 224.0;
  const double y_offset = f->full_range ? 0.0 : 16.0;
  l.scale = (float) (1.0 / y_range);
  l.bias = (float) (-y_offset / y_range);
  if (color == PP_COLOR_LUMA) {
    /* Y alone reads like GRAY8 (strided, maybe interleaved), with the range
     * stretched to [0, 1]. */
    if (f->planes[0].offset != 0 || f->offset[0] >= f->step[0])
      return pp_error(msg, EINVAL, "the Y samples do not start the frame");
    l.channels = 1;
    l.pixel_stride = f->step[0];
    l.row_stride = f->stride[0];
    l.channel_offset[0] = (uint8_t) f->offset[0];
    l.n_planes = 1;
    l.planes[0] = f->planes[0];
    /* Only the luma plane of a planar frame goes to the GPU. */
    l.frame_bytes = f->n_planes > 1
                        ? f->planes[0].offset + (size_t) f->planes[0].stride * f->planes[0].rows
                        : f->frame_bytes;
  } else {
    if (f->width > PP_YUV_MAX_WIDTH || f->height > PP_YUV_MAX_WIDTH)
      return pp_error(msg, EINVAL, "YUV frames of more than %u pixels a side are not supported",
                      PP_YUV_MAX_WIDTH);
    l.channels = 3;
    l.is_yuv = true;
    pp_yuv *y = &l.yuv;
    memcpy(y->offset, f->offset, sizeof y->offset);
    memcpy(y->stride, f->stride, sizeof y->stride);
    memcpy(y->step, f->step, sizeof y->step);
    y->chroma_w = (f->width + (1u << f->xshift) - 1) >> f->xshift;
    y->chroma_h = (f->height + (1u << f->yshift) - 1) >> f->yshift;
    /* Luma x is at chroma position x / 2^s when cosited; centred chroma
     * sample j covers luma [j·2^s, (j+1)·2^s), centre (j + 0.5)·2^s. */
    y->x_scale = 1.0f / (float) (1u << f->xshift);
    y->y_scale = 1.0f / (float) (1u << f->yshift);
    y->x_offset = f->x_cosited ? 0.0f : 0.5f - 0.5f * y->x_scale;
    y->y_offset = f->y_cosited ? 0.0f : 0.5f - 0.5f * y->y_scale;
    y->luma_scale = l.scale;
    y->luma_bias = l.bias;
    y->c_scale = (float) (1.0 / c_range);
    const double kr = f->kr, kb = f->kb, kg = 1.0 - kr - kb;
    y->r_cr = (float) (2.0 * (1.0 - kr));
    y->b_cb = (float) (2.0 * (1.0 - kb));
    y->g_cb = (float) (-2.0 * kb * (1.0 - kb) / kg);
    y->g_cr = (float) (-2.0 * kr * (1.0 - kr) / kg);
    l.n_planes = f->n_planes;
    memcpy(l.planes, f->planes, sizeof l.planes);
    l.frame_bytes = f->frame_bytes;
  }
  const int rc = map_samples(&l, mapping, patch, msg);
  if (rc == 0)
    *out = l;
  return rc;
}

int
pp_layout_for_tensor(uint32_t n, uint32_t k, pp_frame_layout *out, char **msg)
{
  if (n == 0 || k == 0)
    return pp_error(msg, EINVAL, "a %u×%u tensor is empty", n, k);
  if ((uint64_t) n * k > MAX_ELEMENTS)
    return pp_error(msg, EINVAL, "a %u×%u tensor is too large", n, k);
  *out = (pp_frame_layout){
    .kind = PP_LAYOUT_TENSOR,
    .n = n,
    .k = k,
    .frame_bytes = (size_t) n * k * sizeof(float),
  };
  return 0;
}

bool
pp_frame_layout_stack(const pp_frame_layout *one, unsigned frames, pp_frame_layout *out)
{
  if (frames == 0 || (uint64_t) one->n * one->k * frames > MAX_ELEMENTS ||
      (uint64_t) one->frame_bytes * frames > UINT32_MAX)
    return false;
  pp_frame_layout l = *one;
  l.n *= frames;
  l.frame_bytes *= frames;
  if (one->kind != PP_LAYOUT_TENSOR) {
    if (one->is_yuv || one->n_planes != 1 || one->planes[0].offset != 0 ||
        one->frame_bytes != (size_t) one->row_stride * one->height ||
        one->planes[0].rows != one->height ||
        (one->kind == PP_LAYOUT_PATCHES && one->height % one->patch != 0))
      return false;
    l.height *= frames;
    l.planes[0].rows *= frames;
  }
  *out = l;
  return true;
}

bool
pp_frame_layout_equal(const pp_frame_layout *a, const pp_frame_layout *b)
{
  if (a->kind != b->kind || a->n != b->n || a->k != b->k || a->width != b->width ||
      a->height != b->height || a->channels != b->channels || a->pixel_stride != b->pixel_stride ||
      a->row_stride != b->row_stride || a->patch != b->patch ||
      a->patches_per_row != b->patches_per_row ||
      memcmp(a->channel_offset, b->channel_offset, sizeof a->channel_offset) != 0 ||
      a->scale != b->scale || a->bias != b->bias || a->is_yuv != b->is_yuv ||
      a->n_planes != b->n_planes || a->frame_bytes != b->frame_bytes)
    return false;
  /* pp_yuv and pp_plane are 32-bit fields only: no padding to compare. */
  if (a->is_yuv && memcmp(&a->yuv, &b->yuv, sizeof a->yuv) != 0)
    return false;
  return memcmp(a->planes, b->planes, a->n_planes * sizeof a->planes[0]) == 0;
}
