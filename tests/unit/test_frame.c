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
  g_free(msg);
}

int
main(void)
{
  seed = test_seed();
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_rows_every_format),
    cmocka_unit_test(test_patches_crop_edges),
    cmocka_unit_test(test_tensor_layout),
    cmocka_unit_test(test_rejects),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
