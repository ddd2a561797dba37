/* How the bytes of one input frame become the N×K float matrix X the MLP reads.
 *
 * Shared by the CPU reference and the CUDA kernels, so both index frames the
 * same way; the CUDA kernels gather straight from the frame bytes on the GPU
 * (pixels cross PCIe as bytes and become x/255 floats inside the first GEMM).
 */
#ifndef PP_FRAME_LAYOUT_H
#define PP_FRAME_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __CUDACC__
#define PP_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define PP_HOST_DEVICE static inline
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  PP_LAYOUT_ROWS = 0,    /* one image row per sample: K = width × channels */
  PP_LAYOUT_PATCHES = 1, /* one p×p patch per sample: K = p·p·channels */
  PP_LAYOUT_TENSOR = 2,  /* float32 N×K as it comes */
} pp_layout_kind;

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
  size_t frame_bytes; /* bytes one input buffer must hold */
} pp_frame_layout;

/* Byte offset in the frame of X[n][k] for the video mappings. */
PP_HOST_DEVICE size_t
pp_layout_pixel_offset(const pp_frame_layout *l, uint32_t n, uint32_t k)
{
  uint32_t x, y, c;
  if (l->kind == PP_LAYOUT_ROWS) {
    y = n;
    x = k / l->channels;
    c = k - x * l->channels;
  } else {
    const uint32_t gy = n / l->patches_per_row, gx = n - gy * l->patches_per_row;
    const uint32_t row_elems = l->patch * l->channels;
    const uint32_t py = k / row_elems, rem = k - py * row_elems;
    const uint32_t px = rem / l->channels;
    c = rem - px * l->channels;
    y = gy * l->patch + py;
    x = gx * l->patch + px;
  }
  return (size_t) y * l->row_stride + (size_t) x * l->pixel_stride + l->channel_offset[c];
}

#ifdef __cplusplus
}
#endif

#endif
