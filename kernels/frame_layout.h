// SPDX-License-Identifier: LGPL-2.1-or-later
/* How the bytes of one input frame become the N×K float matrix X the MLP reads.
 *
 * Shared by the CPU reference and the CUDA kernels, so both index frames the
 * same way; the CUDA kernels gather straight from the frame bytes on the GPU
 * (pixels cross PCIe as bytes and become x/255 floats inside the first GEMM).
 */
#ifndef PP_FRAME_LAYOUT_H
#define PP_FRAME_LAYOUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __CUDACC__
#define PP_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define PP_HOST_DEVICE static inline
#endif
/* A frame byte: through the read-only cache on the GPU. */
#ifdef __CUDA_ARCH__
#define PP_FRAME_BYTE(p) __ldg(p)
#else
#define PP_FRAME_BYTE(p) (*(p))
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  PP_LAYOUT_ROWS = 0,    /* one image row per sample: K = width × channels */
  PP_LAYOUT_PATCHES = 1, /* one p×p patch per sample: K = p·p·channels */
  PP_LAYOUT_TENSOR = 2,  /* float32 N×K as it comes */
} pp_layout_kind;

/* YUV frames (NV12, I420, YUY2, ...) read as R,G,B: where each component's
 * samples live and the colour matrix, so any 8-bit 4:2:0, 4:2:2 or 4:4:4
 * layout is one description. Chroma is upsampled linearly between the two
 * (or four) nearest chroma samples, placed where the caps' chroma-site puts
 * them (MPEG-2: on even luma columns, between luma rows), edges clamped
 * (docs/elements.md states the steps; tests/elements/test_yuv.c holds them). */
typedef struct {
  uint32_t offset[3]; /* Y, U, V: byte of the component's sample (0, 0) */
  uint32_t stride[3]; /* bytes per row of the component's plane */
  uint32_t step[3];   /* bytes between horizontally adjacent samples */
  uint32_t chroma_w, chroma_h;
  /* Luma pixel x sits at chroma column x·x_scale − x_offset (y likewise). */
  float x_scale, x_offset, y_scale, y_offset;
  /* Y' = Y·luma_scale + luma_bias, Cb = (U − 128)·c_scale, Cr likewise; then
   * R = Y' + r_cr·Cr, G = Y' + g_cb·Cb + g_cr·Cr, B = Y' + b_cb·Cb, clamped
   * to [0, 1] as an 8-bit RGB frame would be. */
  float luma_scale, luma_bias, c_scale;
  float r_cr, g_cb, g_cr, b_cb;
} pp_yuv;

/* A plane as it lies in a frame's memory: what a copy of the frame moves. */
typedef struct {
  uint32_t offset;    /* from the frame's first byte */
  uint32_t stride;    /* bytes per row */
  uint32_t row_bytes; /* bytes of a row that hold samples */
  uint32_t rows;
} pp_plane;

#define PP_MAX_PLANES 3

typedef struct {
  pp_layout_kind kind;
  uint32_t n, k;            /* X is n×k */
  uint32_t width;           /* pixels per image row (video) */
  uint32_t height;          /* image rows (video) */
  uint32_t channels;        /* channels a pixel contributes to X (3 for RGBx) */
  uint32_t pixel_stride;    /* bytes per pixel in memory (4 for RGBx) */
  uint32_t row_stride;      /* bytes per image row in memory, padding included */
  uint32_t patch;           /* patch side p; patches mapping only */
  uint32_t patches_per_row; /* width / p; patches mapping only */
  /* Byte offset inside a pixel of channel c, channels in R,G,B,A order, so a
   * model sees the same X for RGB and BGR frames of the same image. */
  uint8_t channel_offset[4];
  /* A byte b becomes b·scale + bias: 1/255 and 0, or the limited range
   * (16..235) of a YUV frame's luma stretched to [0, 1]. */
  float scale, bias;
  /* is_yuv: channels R,G,B computed from `yuv` (pixel_stride, row_stride and
   * channel_offset unused). */
  bool is_yuv;
  pp_yuv yuv;
  /* The planes the model reads, in frame order: the bytes that go to the GPU
   * (only the luma plane of a planar frame when the model sees luma). */
  uint32_t n_planes;
  pp_plane planes[PP_MAX_PLANES];
  size_t frame_bytes; /* bytes one input buffer must hold */
} pp_frame_layout;

/* Pixel (x, y) and channel c of X[n][k] for the video mappings. */
PP_HOST_DEVICE void
pp_layout_pixel(const pp_frame_layout *l, uint32_t n, uint32_t k, uint32_t *x, uint32_t *y,
                uint32_t *c)
{
  if (l->kind == PP_LAYOUT_ROWS) {
    *y = n;
    *x = k / l->channels;
    *c = k - *x * l->channels;
  } else {
    const uint32_t gy = n / l->patches_per_row, gx = n - gy * l->patches_per_row;
    const uint32_t row_elems = l->patch * l->channels;
    const uint32_t py = k / row_elems, rem = k - py * row_elems;
    const uint32_t px = rem / l->channels;
    *c = rem - px * l->channels;
    *y = gy * l->patch + py;
    *x = gx * l->patch + px;
  }
}

/* Two neighbouring sample indices around position p (clamped to [0, n)) and
 * the weight of the second. */
PP_HOST_DEVICE float
pp_yuv_between(float p, uint32_t n, uint32_t *i0, uint32_t *i1)
{
  const float lo = p < 0.0f ? 0.0f : p;
  uint32_t i = (uint32_t) lo;
  if (i >= n - 1) {
    *i0 = *i1 = n - 1;
    return 0.0f;
  }
  *i0 = i;
  *i1 = i + 1;
  return lo - (float) i;
}

/* Chroma component c (1: U, 2: V) at chroma columns x0/x1 (weight fx) and
 * rows y0/y1 (weight fy), minus 128. */
PP_HOST_DEVICE float
pp_yuv_chroma(const pp_yuv f, const uint8_t *frame, uint32_t c, uint32_t x0, uint32_t x1, float fx,
              uint32_t y0, uint32_t y1, float fy)
{
  const uint8_t *r0 = frame + f.offset[c] + (size_t) y0 * f.stride[c];
  const uint8_t *r1 = frame + f.offset[c] + (size_t) y1 * f.stride[c];
  const float a = PP_FRAME_BYTE(r0 + (size_t) x0 * f.step[c]);
  const float b = PP_FRAME_BYTE(r0 + (size_t) x1 * f.step[c]);
  const float d = PP_FRAME_BYTE(r1 + (size_t) x0 * f.step[c]);
  const float e = PP_FRAME_BYTE(r1 + (size_t) x1 * f.step[c]);
  const float top = a + (b - a) * fx, bottom = d + (e - d) * fx;
  return top + (bottom - top) * fy - 128.0f;
}

PP_HOST_DEVICE float
pp_clamp01(float v)
{
  return v < 0.0f ? 0.0f : v > 1.0f ? 1.0f : v;
}

/* R, G and B of pixel (x, y) of a YUV frame: one luma and eight chroma reads
 * serve all three. By value: on the GPU the fields then stay in kernel
 * parameters, not a local copy. */
PP_HOST_DEVICE void
pp_yuv_rgb(const pp_yuv f, const uint8_t *frame, uint32_t x, uint32_t y, float *r, float *g,
           float *b)
{
  const float luma =
      PP_FRAME_BYTE(frame + f.offset[0] + (size_t) y * f.stride[0] + (size_t) x * f.step[0]);
  const float yp = luma * f.luma_scale + f.luma_bias;
  uint32_t x0, x1, y0, y1;
  const float fx = pp_yuv_between((float) x * f.x_scale - f.x_offset, f.chroma_w, &x0, &x1);
  const float fy = pp_yuv_between((float) y * f.y_scale - f.y_offset, f.chroma_h, &y0, &y1);
  const float cb = f.c_scale * pp_yuv_chroma(f, frame, 1, x0, x1, fx, y0, y1, fy);
  const float cr = f.c_scale * pp_yuv_chroma(f, frame, 2, x0, x1, fx, y0, y1, fy);
  *r = pp_clamp01(yp + f.r_cr * cr);
  *g = pp_clamp01(yp + f.g_cb * cb + f.g_cr * cr);
  *b = pp_clamp01(yp + f.b_cb * cb);
}

/* Byte offset in the frame of X[n][k] for the byte (non-YUV) video mappings. */
PP_HOST_DEVICE size_t
pp_layout_pixel_offset(const pp_frame_layout *l, uint32_t n, uint32_t k)
{
  uint32_t x, y, c;
  pp_layout_pixel(l, n, k, &x, &y, &c);
  return (size_t) y * l->row_stride + (size_t) x * l->pixel_stride + l->channel_offset[c];
}

#ifdef __cplusplus
}
#endif

#endif
