/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The CUDA backend's plan line (cuda_plan.h), without a GPU: every kind of
 * plan prints and parses back to the same line; a part of a line parses to
 * just that part; what is not a plan is refused with a message that names
 * the part at fault. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <glib.h>
#include <string.h>

#include "cuda_plan.h"

/* Parses `line`, prints it again, and expects the same text. */
static void
round_trip(const char *line)
{
  pp_cuda_plan plan;
  char *msg = NULL;
  if (pp_cuda_plan_parse(line, &plan, &msg) < 0)
    fail_msg("'%s': %s", line, msg);
  g_autofree char *again = pp_cuda_plan_to_line(&plan);
  if (strcmp(again, line) != 0)
    fail_msg("'%s' came back as '%s'", line, again);
}

static void
test_lines_round_trip(void **state)
{
  (void) state;
  round_trip("kernels=fused frames=in-place graphs=on signal=on completion=consumer");
  round_trip("kernels=small:4 frames=whole graphs=off signal=off completion=event-thread");
  round_trip("kernels=wide frames=chunks:3 graphs=on signal=off completion=consumer");
  round_trip("kernels=split:2+rowdot frames=whole graphs=on signal=on completion=consumer "
             "gemm0=id21.tile15.stages6.splitk8.reduction2");
  /* cuBLAS's own split-K is -1; the cluster and inner shapes are 16-bit. */
  round_trip("kernels=cublas+cublas+own64+rowdot frames=chunks:4 graphs=on signal=on "
             "completion=consumer gemm0=id43.tile20.stages34.splitk-1.reduction2.cluster3 "
             "gemm0-chunk=id11 gemm1=id55.tile11.stages31.swizzle1.custom2.inner7 "
             "gemm1-chunk=id55");
  /* Parts of a line. */
  round_trip("kernels=own+rowdot");
  round_trip("frames=chunks:16");
  round_trip("graphs=off signal=off");
}

/* Every path of the kernel table parses from its name (and its first
 * count, where it takes some) to itself, as the whole MLP's kernel or a
 * layer's, and prints back the same. */
static void
test_every_path_of_the_table(void **state)
{
  (void) state;
  for (int p = 0; p < PP_N_PATHS; p++) {
    const pp_cuda_path_info *info = pp_cuda_path_info_of(p);
    assert_non_null(info);
    assert_string_equal(pp_cuda_path_name(p), info->name);
    assert_int_equal(pp_cuda_path_is_whole(p), info->whole);
    unsigned count = 0;
    for (unsigned c = 1; c < 32 && !count; c++)
      if (info->counts & 1u << c)
        count = c;
    g_autofree char *token =
        count ? g_strdup_printf("%s:%u", info->name, count) : g_strdup(info->name);
    g_autofree char *line = info->whole ? g_strdup_printf("kernels=%s", token)
                                        : g_strdup_printf("kernels=own+%s", token);
    pp_cuda_plan plan;
    char *msg = NULL;
    if (pp_cuda_plan_parse(line, &plan, &msg) < 0)
      fail_msg("'%s': %s", line, msg);
    assert_int_equal(info->whole ? plan.whole : plan.layers[1].path, p);
    round_trip(line);
  }
  assert_null(pp_cuda_path_info_of(PP_N_PATHS));
  assert_string_equal(pp_cuda_path_name(PP_N_PATHS), "?");
}

/* A plan made in code prints every part, and parsing it gives it back. */
static void
test_plan_value(void **state)
{
  (void) state;
  pp_cuda_plan plan = {
    .given = PP_PLAN_ALL,
    .n_layers = 3,
    .layers = { { .path = PP_PATH_SPLIT,
                  .pieces = 1,
                  .has_algo = true,
                  .algo = { .id = 7, .tile = 3, .splitk = 1 } },
                { .path = PP_PATH_OWN },
                { .path = PP_PATH_ROWDOT } },
    .whole = PP_N_PATHS,
    .frames = PP_FRAMES_WHOLE,
    .graphs = true,
    .signal = true,
    .completion = PP_COMPLETION_CONSUMER,
  };
  g_autofree char *line = pp_cuda_plan_to_line(&plan);
  assert_string_equal(line, "kernels=split:1+own+rowdot frames=whole graphs=on signal=on "
                            "completion=consumer gemm0=id7.tile3");
  pp_cuda_plan back;
  char *msg = NULL;
  assert_int_equal(pp_cuda_plan_parse(line, &back, &msg), 0);
  assert_int_equal(back.given, PP_PLAN_ALL);
  assert_int_equal(back.n_layers, 3);
  assert_int_equal(back.layers[0].path, PP_PATH_SPLIT);
  assert_int_equal(back.layers[0].pieces, 1);
  assert_true(back.layers[0].has_algo);
  assert_int_equal(back.layers[0].algo.id, 7);
  assert_int_equal(back.layers[0].algo.tile, 3);
  assert_int_equal(back.layers[0].algo.splitk, 1);
  assert_int_equal(back.layers[2].path, PP_PATH_ROWDOT);
  assert_true(pp_cuda_plan_uses_cublas(&back));
  /* A whole-MLP kernel uses no cuBLAS, and prints no layer's algorithm. */
  plan.whole = PP_PATH_FUSED;
  g_autofree char *fused = pp_cuda_plan_to_line(&plan);
  assert_null(strstr(fused, "gemm"));
  assert_false(pp_cuda_plan_uses_cublas(&plan));
}

static void
test_refusals(void **state)
{
  (void) state;
  static const struct {
    const char *line, *needle;
  } bad[] = {
    { "kernels=own+magic",
      "'magic' is not one of own, own64, cublas, split:P, rowdot (or fused, small:R, wide, warp "
      "for the whole MLP)" },
    { "kernels=small:3", "small takes 1, 2, 4 or 8 rows" },
    { "kernels=wide:2", "wide takes no count" },
    { "kernels=own+own:4", "own takes no count" },
    { "kernels=split", "split takes 1 or 2 pieces (split:2)" },
    { "kernels=split:3", "split takes 1 or 2 pieces" },
    { "frames=chunks:17", "chunks:C with C in 2..16" },
    { "frames=sideways", "give whole, in-place or chunks:C" },
    { "graphs=maybe", "graphs=maybe: give on or off" },
    { "completion=host-func", "give consumer or event-thread" },
    { "speed=fast", "'speed' is not one of kernels, frames" },
    { "kernels", "'kernels' is not key=value" },
    { "gemm0=tile3", "needs its id" },
    { "gemm0=id3.tilex", "'tilex' is not an attribute" },
    { "gemm0=id3.stages-2", "'stages-2' is not an attribute" },
    { "gemmX=id3", "is not gemmI or gemmI-chunk" },
    { "kernels=own+rowdot gemm5=id3", "gemm5 names a layer past the 2 of kernels=" },
  };
  for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
    pp_cuda_plan plan;
    char *msg = NULL;
    assert_int_equal(pp_cuda_plan_parse(bad[i].line, &plan, &msg), -22);
    if (!msg || !strstr(msg, bad[i].needle))
      fail_msg("'%s' said '%s', not '%s'", bad[i].line, msg, bad[i].needle);
    g_clear_pointer(&msg, g_free);
  }
}

int
main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_lines_round_trip),
    cmocka_unit_test(test_plan_value),
    cmocka_unit_test(test_every_path_of_the_table),
    cmocka_unit_test(test_refusals),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
