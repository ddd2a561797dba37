// SPDX-License-Identifier: LGPL-2.1-or-later
/* The MLP on the CPU, layer by layer over packed weights (cpu_mlp.h). */
#include "cpu_mlp.h"

#include <string.h>

/* GCC/Clang vector extensions: portable C that becomes AVX2 FMAs in the
 * x86-64-v3 clone and SSE in the baseline one. */
typedef float pp_v8 __attribute__((vector_size(32)));
/* The same, at any float alignment: loads and stores through it are unaligned
 * vector moves. */
typedef float pp_v8_unaligned __attribute__((vector_size(32), aligned(4), may_alias));

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define PP_CPU_MULTIVERSION __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define PP_CPU_MULTIVERSION
#endif

#define ROWS_PER_BLOCK 6

/* Macros rather than functions: a function taking or returning a 32-byte
 * vector has a different ABI with and without AVX. */
#define load8(p) (*(const pp_v8_unaligned *) (p))
#define store8(p, v) (*(pp_v8_unaligned *) (p) = (v))

void
pp_cpu_gather(const pp_frame_layout *layout, const void *frame, float *x)
{
  const uint32_t n = layout->n, k = layout->k;

  if (layout->kind == PP_LAYOUT_TENSOR) {
    memcpy(x, frame, (size_t) n * k * sizeof(float));
    return;
  }
  const uint8_t *bytes = frame;
  if (layout->is_yuv) {
    /* A pixel's R,G,B are three consecutive inputs. */
    for (uint32_t row = 0; row < n; row++)
      for (uint32_t col = 0; col < k; col += 3) {
        uint32_t px, py, c;
        pp_layout_pixel(layout, row, col, &px, &py, &c);
        float *out = x + (size_t) row * k + col;
        pp_yuv_rgb(layout->yuv, bytes, px, py, &out[0], &out[1], &out[2]);
      }
    return;
  }
  const uint32_t channels = layout->channels;
  const float scale = layout->scale, bias = layout->bias;
  for (uint32_t row = 0; row < n; row++) {
    float *out = x + (size_t) row * k;
    /* One pixel at a time: its channels sit together in X and in memory. */
    for (uint32_t col = 0; col < k; col += channels) {
      const uint8_t *pixel =
          bytes + pp_layout_pixel_offset(layout, row, col) - layout->channel_offset[0];
      for (uint32_t c = 0; c < channels; c++)
        out[col + c] = pixel[layout->channel_offset[c]] * scale + bias;
    }
  }
}

size_t
pp_cpu_packed_floats(uint32_t out, uint32_t in)
{
  const size_t panels = (out + PP_CPU_PANEL - 1) / PP_CPU_PANEL;
  return panels * PP_CPU_PANEL * in;
}

void
pp_cpu_pack_weights(const float *w, uint32_t out, uint32_t in, float *packed)
{
  const uint32_t panels = (out + PP_CPU_PANEL - 1) / PP_CPU_PANEL;
  for (uint32_t p = 0; p < panels; p++) {
    float *panel = packed + (size_t) p * PP_CPU_PANEL * in;
    for (uint32_t k = 0; k < in; k++) {
      for (uint32_t j = 0; j < PP_CPU_PANEL; j++) {
        const uint32_t o = p * PP_CPU_PANEL + j;
        panel[(size_t) k * PP_CPU_PANEL + j] = o < out ? w[(size_t) o * in + k] : 0.0f;
      }
    }
  }
}

/* 6 rows × 16 outputs held in 12 vector accumulators; rows past the end of X
 * alias the last real row, so the loop has no edge cases. */
static inline __attribute__((always_inline)) void
linear_block(const float *x, uint32_t rows, uint32_t in, const float *panel, const float *bias,
             uint32_t out_base, uint32_t out, pp_act act, float *y)
{
  const float *r[ROWS_PER_BLOCK];
  for (uint32_t i = 0; i < ROWS_PER_BLOCK; i++)
    r[i] = x + (size_t) (i < rows ? i : rows - 1) * in;

  pp_v8 acc[ROWS_PER_BLOCK][2] = { { { 0 } } };
  for (uint32_t k = 0; k < in; k++) {
    const pp_v8 w0 = load8(panel + (size_t) k * PP_CPU_PANEL);
    const pp_v8 w1 = load8(panel + (size_t) k * PP_CPU_PANEL + 8);
#pragma GCC unroll 6
    for (uint32_t i = 0; i < ROWS_PER_BLOCK; i++) {
      const float a = r[i][k];
      acc[i][0] += a * w0;
      acc[i][1] += a * w1;
    }
  }

  const uint32_t cols = out - out_base < PP_CPU_PANEL ? out - out_base : PP_CPU_PANEL;
  for (uint32_t i = 0; i < rows; i++) {
    float tile[PP_CPU_PANEL];
    store8(tile, acc[i][0]);
    store8(tile + 8, acc[i][1]);
    float *dst = y + (size_t) i * out + out_base;
    for (uint32_t j = 0; j < cols; j++) {
      dst[j] = pp_act_apply(act, tile[j] + (bias ? bias[out_base + j] : 0.0f));
    }
  }
}

PP_CPU_MULTIVERSION void
pp_cpu_linear(const float *x, uint32_t n, uint32_t in, const float *packed, const float *bias,
              uint32_t out, pp_act act, float *y)
{
  const uint32_t panels = (out + PP_CPU_PANEL - 1) / PP_CPU_PANEL;
  /* Panel-outer: one panel (in × 16 floats) stays in cache while every row
   * block of X streams past it. */
  for (uint32_t p = 0; p < panels; p++) {
    const float *panel = packed + (size_t) p * PP_CPU_PANEL * in;
    for (uint32_t row = 0; row < n; row += ROWS_PER_BLOCK) {
      const uint32_t rows = n - row < ROWS_PER_BLOCK ? n - row : ROWS_PER_BLOCK;
      linear_block(x + (size_t) row * in, rows, in, panel, bias, p * PP_CPU_PANEL, out, act,
                   y + (size_t) row * out);
    }
  }
}

PP_CPU_MULTIVERSION void
pp_cpu_matvec(const float *h, uint32_t n, uint32_t d, const float *w, float bias, pp_act act,
              float *y)
{
  for (uint32_t i = 0; i < n; i++) {
    const float *row = h + (size_t) i * d;
    pp_v8 acc0 = { 0 }, acc1 = { 0 };
    uint32_t k = 0;
    for (; k + 16 <= d; k += 16) {
      acc0 += load8(row + k) * load8(w + k);
      acc1 += load8(row + k + 8) * load8(w + k + 8);
    }
    float tail[8];
    store8(tail, acc0 + acc1);
    float sum = 0.0f;
    for (uint32_t j = 0; j < 8; j++)
      sum += tail[j];
    for (; k < d; k++)
      sum += row[k] * w[k];
    y[i] = pp_act_apply(act, sum + bias);
  }
}
