// SPDX-License-Identifier: LGPL-2.1-or-later
/* Frame → X: layouts for every pixel format and both mappings, and the
 * gather that builds X, against an image the test encodes itself. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <glib.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_mlp.h"
#include "frame.h"
#include "testutil.h"

static uint64_t seed;

typedef struct {
  pp_pixel_format format;
  const char *name;
  int bytes;    /* per pixel */
  int where[4]; /* memory position of R, G, B, A; -1 when absent */
  int channels; /* inputs per pixel */
} format_case;

static const format_case formats[] = {
  { PP_PIXEL_GRAY8, "GRAY8", 1, { 0, -1, -1, -1 }, 1 },
  { PP_PIXEL_RGB, "RGB", 3, { 0, 1, 2, -1 }, 3 },
  { PP_PIXEL_BGR, "BGR", 3, { 2, 1, 0, -1 }, 3 },
  { PP_PIXEL_RGBA, "RGBA", 4, { 0, 1, 2, 3 }, 4 },
  { PP_PIXEL_BGRA, "BGRA", 4, { 2, 1, 0, 3 }, 4 },
  { PP_PIXEL_RGBX, "RGBx", 4, { 0, 1, 2, -1 }, 3 },
  { PP_PIXEL_BGRX, "BGRx", 4, { 2, 1, 0, -1 }, 3 },
};

/* image[y][x][c] in R,G,B,A order → bytes of `f`, row padding filled with
 * noise so a gather that reads it shows. */
static uint8_t *
encode(const format_case *f, const uint8_t *image, int w, int h, int stride, test_rng *rng)
{
  uint8_t *frame = malloc((size_t) stride * h);
  test_rng_fill_bytes(rng, frame, (size_t) stride * h);
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++)
      for (int c = 0; c < 4; c++)
        if (f->where[c] >= 0)
          frame[y * stride + x * f->bytes + f->where[c]] = image[(y * w + x) * 4 + c];
  return frame;
}

static void
test_rows_every_format(void **state)
{
  (void) state;
  test_rng rng;
  test_rng_seed(&rng, seed);
  const int w = 13, h = 5;
  uint8_t image[13 * 5 * 4];
  for (size_t i = 0; i < G_N_ELEMENTS(formats); i++) {
    const format_case *f = &formats[i];
    const int stride = (w * f->bytes + 3) / 4 * 4 + 4; /* padded, as GStreamer does, and more */
    test_rng_fill_bytes(&rng, image, sizeof image);
    uint8_t *frame = encode(f, image, w, h, stride, &rng);
    pp_frame_layout l;
    char *msg = NULL;
    assert_int_equal(pp_layout_for_video(f->format, w, h, stride, PP_MAPPING_ROWS, 0, &l, &msg), 0);
    assert_int_equal(l.n, h);
    assert_int_equal(l.k, w * f->channels);
    assert_int_equal(l.frame_bytes, (size_t) stride * h);
    float *x = malloc(sizeof(float) * l.n * l.k);
    test_poison(x, (size_t) l.n * l.k);
    pp_cpu_gather(&l, frame, x);
    for (int y = 0; y < h; y++)
      for (int px = 0; px < w; px++)
        for (int c = 0; c < f->channels; c++)
          assert_float_equal(x[y * l.k + px * f->channels + c],
                             image[(y * w + px) * 4 + c] / 255.0f, 1e-7);
    free(x);
    free(frame);
  }
}

static void
test_patches_crop_edges(void **state)
{
  (void) state;
  test_rng rng;
  test_rng_seed(&rng, seed + 1);
  /* 30×20 RGB with 7×7 patches: 4×2 whole patches; the 2-pixel right strip and
   * 6-pixel bottom strip are left out. */
  const int w = 30, h = 20, p = 7, stride = 92;
  const format_case *f = &formats[2]; /* BGR */
  uint8_t image[30 * 20 * 4];
  test_rng_fill_bytes(&rng, image, sizeof image);
  uint8_t *frame = encode(f, image, w, h, stride, &rng);
  pp_frame_layout l;
  char *msg = NULL;
  assert_int_equal(pp_layout_for_video(f->format, w, h, stride, PP_MAPPING_PATCHES, p, &l, &msg),
                   0);
  assert_int_equal(l.n, 8);
  assert_int_equal(l.k, p * p * 3);
  float *x = malloc(sizeof(float) * l.n * l.k);
  test_poison(x, (size_t) l.n * l.k);
  pp_cpu_gather(&l, frame, x);
  for (int gy = 0; gy < 2; gy++)
    for (int gx = 0; gx < 4; gx++)
      for (int py = 0; py < p; py++)
        for (int px = 0; px < p; px++)
          for (int c = 0; c < 3; c++) {
            const int n = gy * 4 + gx, k = (py * p + px) * 3 + c;
            const int y = gy * p + py, xx = gx * p + px;
            assert_float_equal(x[n * l.k + k], image[(y * w + xx) * 4 + c] / 255.0f, 1e-7);
          }
  free(x);
  free(frame);
}

static void
test_tensor_layout(void **state)
{
  (void) state;
  pp_frame_layout l;
  char *msg = NULL;
  assert_int_equal(pp_layout_for_tensor(4096, 256, &l, &msg), 0);
  assert_int_equal(l.frame_bytes, 4096u * 256 * 4);
  float src[6] = { 0.5f, -1, 2, 3, -4, 5 }, x[6];
  assert_int_equal(pp_layout_for_tensor(2, 3, &l, &msg), 0);
  pp_cpu_gather(&l, src, x);
  assert_memory_equal(src, x, sizeof src);
}

static void
test_rejects(void **state)
{
  (void) state;
  pp_frame_layout l;
  char *msg = NULL;
  assert_int_equal(pp_layout_for_video(PP_PIXEL_RGB, 5, 5, 16, PP_MAPPING_PATCHES, 8, &l, &msg),
                   -EINVAL);
  assert_non_null(strstr(msg, "no whole 8×8 patch"));
  g_clear_pointer(&msg, g_free);
  assert_int_equal(pp_layout_for_video(PP_PIXEL_RGB, 5, 5, 12, PP_MAPPING_ROWS, 0, &l, &msg),
                   -EINVAL);
  assert_non_null(strstr(msg, "stride"));
  g_clear_pointer(&msg, g_free);
  assert_int_equal(pp_layout_for_tensor(0, 3, &l, &msg), -EINVAL);
  g_clear_pointer(&msg, g_free);
}

/* A 16×8 I420 frame as GStreamer lays it out: Y 16×8, then U and V 8×4. */
static pp_yuv_frame
i420_16x8(void)
{
  return (pp_yuv_frame){
    .width = 16,
    .height = 8,
    .offset = { 0, 128, 160 },
    .stride = { 16, 8, 8 },
    .step = { 1, 1, 1 },
    .xshift = 1,
    .yshift = 1,
    .x_cosited = true,
    .kr = 0.2126,
    .kb = 0.0722,
    .n_planes = 3,
    .planes = { { 0, 16, 16, 8 }, { 128, 8, 8, 4 }, { 160, 8, 8, 4 } },
    .frame_bytes = 192,
  };
}

/* What the YUV description says: K, N, the bytes the GPU gets; and what it
 * refuses, with the reason. Pixel values are the element tests' business
 * (test_yuv.c, against a float64 reference). */
static void
test_yuv_layouts(void **state)
{
  (void) state;
  pp_frame_layout l;
  char *msg = NULL;
  pp_yuv_frame f = i420_16x8();
  assert_int_equal(pp_layout_for_yuv(&f, PP_COLOR_RGB, PP_MAPPING_PATCHES, 4, &l, &msg), 0);
  assert_true(l.is_yuv);
  assert_int_equal(l.k, 4 * 4 * 3);
  assert_int_equal(l.n, 4 * 2);
  assert_int_equal(l.frame_bytes, 192);
  assert_int_equal(l.n_planes, 3);
  assert_int_equal(l.yuv.chroma_w, 8);
  assert_true(l.yuv.x_offset == 0.0f && l.yuv.y_offset == 0.25f); /* cosited, centred */
  /* Luma: the Y plane alone, read like GRAY8 with limited range stretched. */
  assert_int_equal(pp_layout_for_yuv(&f, PP_COLOR_LUMA, PP_MAPPING_ROWS, 0, &l, &msg), 0);
  assert_false(l.is_yuv);
  assert_int_equal(l.k, 16);
  assert_int_equal(l.frame_bytes, 128);
  assert_int_equal(l.n_planes, 1);
  assert_true(fabsf(235 * l.scale + l.bias - 1.0f) < 1e-6f && fabsf(16 * l.scale + l.bias) < 1e-6f);

  f.frame_bytes = 191; /* V's last sample is past the end */
  assert_int_equal(pp_layout_for_yuv(&f, PP_COLOR_RGB, PP_MAPPING_ROWS, 0, &l, &msg), -EINVAL);
  assert_non_null(strstr(msg, "V samples run past"));
  g_clear_pointer(&msg, g_free);
  f = i420_16x8();
  f.kr = 0;
  assert_int_equal(pp_layout_for_yuv(&f, PP_COLOR_RGB, PP_MAPPING_ROWS, 0, &l, &msg), -EINVAL);
  assert_non_null(strstr(msg, "not a YUV matrix"));
  g_clear_pointer(&msg, g_free);
  f = i420_16x8();
  assert_int_equal(pp_layout_for_yuv(&f, PP_COLOR_RGB, PP_MAPPING_PATCHES, 9, &l, &msg), -EINVAL);
  assert_non_null(strstr(msg, "no whole 9×9 patch"));
  g_clear_pointer(&msg, g_free);
  f.width = PP_YUV_MAX_WIDTH + 2; /* every sample inside the frame, but too wide */
  const uint32_t cw = f.width / 2;
  f.stride[0] = f.width;
  f.stride[1] = f.stride[2] = cw;
  f.offset[1] = f.width * 8;
  f.offset[2] = f.offset[1] + cw * 4;
  f.frame_bytes = (size_t) f.offset[2] + cw * 4;
  assert_int_equal(pp_layout_for_yuv(&f, PP_COLOR_RGB, PP_MAPPING_ROWS, 0, &l, &msg), -EINVAL);
  assert_non_null(strstr(msg, "pixels a side"));
  g_clear_pointer(&msg, g_free);
}

/* Every sample of frame f in a stack of `frames` reads, from the stacked
 * buffer, the bytes it reads from frame f alone. */
static void
check_stacked(const pp_frame_layout *one, unsigned frames)
{
  pp_frame_layout st;
  assert_true(pp_frame_layout_stack(one, frames, &st));
  assert_int_equal(st.n, one->n * frames);
  assert_int_equal(st.k, one->k);
  assert_int_equal(st.frame_bytes, one->frame_bytes * frames);
  for (unsigned f = 0; f < frames; f++)
    for (uint32_t r = 0; r < one->n; r++)
      for (uint32_t k = 0; k < one->k; k += 7)
        if (one->kind == PP_LAYOUT_TENSOR)
          assert_int_equal(((size_t) f * one->n + r) * st.k + k,
                           (size_t) f * one->n * one->k + (size_t) r * one->k + k);
        else
          assert_int_equal(pp_layout_pixel_offset(&st, f * one->n + r, k),
                           f * one->frame_bytes + pp_layout_pixel_offset(one, r, k));
}

/* Frames back to back read as one (a shared backend's batches): rows,
 * patches of whole rows, luma and tensors; not YUV's colours, padding
 * past the last row, or patches cut at the bottom. */
static void
test_stacked_layouts(void **state)
{
  (void) state;
  pp_frame_layout l, st;
  char *msg = NULL;
  assert_int_equal(pp_layout_for_video(PP_PIXEL_RGBX, 17, 6, 72, PP_MAPPING_ROWS, 0, &l, &msg), 0);
  check_stacked(&l, 3);
  assert_int_equal(pp_layout_for_video(PP_PIXEL_BGR, 16, 12, 52, PP_MAPPING_PATCHES, 4, &l, &msg),
                   0);
  check_stacked(&l, 5);
  assert_int_equal(pp_layout_for_tensor(9, 13, &l, &msg), 0);
  check_stacked(&l, 4);
  pp_yuv_frame f = i420_16x8();
  assert_int_equal(pp_layout_for_yuv(&f, PP_COLOR_LUMA, PP_MAPPING_ROWS, 0, &l, &msg), 0);
  check_stacked(&l, 2);
  /* Patches cut at the bottom: the next frame's first patch row would not
   * follow the last whole one. */
  assert_int_equal(pp_layout_for_video(PP_PIXEL_GRAY8, 16, 10, 16, PP_MAPPING_PATCHES, 4, &l, &msg),
                   0);
  assert_false(pp_layout_for_video(PP_PIXEL_GRAY8, 16, 10, 16, PP_MAPPING_PATCHES, 4, &l, &msg) ||
               pp_frame_layout_stack(&l, 2, &st));
  assert_int_equal(pp_layout_for_yuv(&f, PP_COLOR_RGB, PP_MAPPING_ROWS, 0, &l, &msg), 0);
  assert_false(pp_frame_layout_stack(&l, 2, &st));
  assert_int_equal(pp_layout_for_tensor(9, 13, &l, &msg), 0);
  assert_false(pp_frame_layout_stack(&l, 0, &st));
}

int
main(void)
{
  seed = test_seed();
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_rows_every_format), cmocka_unit_test(test_patches_crop_edges),
    cmocka_unit_test(test_tensor_layout),     cmocka_unit_test(test_rejects),
    cmocka_unit_test(test_yuv_layouts),       cmocka_unit_test(test_stacked_layouts),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
