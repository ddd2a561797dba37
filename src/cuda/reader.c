/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A frame layout turned into the kernels' frame reader. */
#include "reader.h"

void
pp_cuda_k_offsets(const pp_frame_layout *layout, int32_t *table)
{
  /* Sample 0's origin is byte 0 (pixel (0, 0)) for both mappings, so its
   * offsets are every sample's offsets from its own origin. */
  for (uint32_t k = 0; k < layout->k; k++) {
    if (layout->is_yuv) {
      uint32_t x, y, c;
      pp_layout_pixel(layout, 0, k, &x, &y, &c);
      table[k] = PP_YUV_ENTRY(x, y, c);
    } else {
      table[k] = (int32_t) pp_layout_pixel_offset(layout, 0, k);
    }
  }
}

/* Every aligned group of four inputs is four contiguous, 4-byte aligned
 * bytes: GRAY8/RGB/RGBA rows and patches whose rows are whole words. */
static bool
groups_are_words(const pp_frame_layout *l, const int32_t *table, uint32_t row_step,
                 uint32_t col_step)
{
  if (l->k % 4 != 0 || row_step % 4 != 0 || col_step % 4 != 0)
    return false;
  for (uint32_t k = 0; k < l->k; k += 4) {
    if (table[k] % 4 != 0)
      return false;
    for (uint32_t j = 1; j < 4; j++)
      if (table[k + j] != table[k] + (int32_t) j)
        return false;
  }
  return true;
}

pp_cuda_a
pp_cuda_a_for_layout(const pp_frame_layout *layout, const int32_t *host_table, const void *frame,
                     const int32_t *device_table)
{
  pp_cuda_a a = { .data = frame };
  if (layout->kind == PP_LAYOUT_TENSOR) {
    a.kind = PP_A_F32;
    a.ld = layout->k;
    return a;
  }
  a.k_offset = device_table;
  a.scale = layout->scale;
  a.bias = layout->bias;
  if (layout->is_yuv) {
    /* Origins in pixels: rows (0, n), patches (gx·p, gy·p). */
    a.kind = PP_A_YUV;
    a.yuv = layout->yuv;
    a.per_row = layout->kind == PP_LAYOUT_ROWS ? 1 : layout->patches_per_row;
    a.row_step = layout->kind == PP_LAYOUT_ROWS ? 1 : layout->patch;
    a.col_step = layout->kind == PP_LAYOUT_ROWS ? 0 : layout->patch;
    return a;
  }
  if (layout->kind == PP_LAYOUT_ROWS) {
    a.per_row = 1;
    a.row_step = layout->row_stride;
  } else {
    a.per_row = layout->patches_per_row;
    a.row_step = layout->patch * layout->row_stride;
    a.col_step = layout->patch * layout->pixel_stride;
  }
  a.kind =
      groups_are_words(layout, host_table, a.row_step, a.col_step) ? PP_A_U8_VEC4 : PP_A_U8_GATHER;
  return a;
}
