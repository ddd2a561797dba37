// SPDX-License-Identifier: LGPL-2.1-or-later
/* The layers description's grammar (src/model/model_desc.c): what it accepts,
 * PyTorch's names and defaults, and each refusal's message. (Against a
 * file's tensors: test_model.c.) */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <glib.h>
#include <string.h>

#include "model_desc.h"

static void
test_desc_grammar(void **state)
{
  (void) state;
  pp_model_desc d;
  char *msg = NULL;
  assert_int_equal(pp_model_desc_parse(" Linear(192,512) ,GELU,linear(512, 256), "
                                       "LeakyReLU(0.2), linear, gelu(tanh), identity, linear,"
                                       "Sigmoid",
                                       &d, &msg),
                   0);
  assert_int_equal(d.n_linear, 4);
  assert_true(d.linear[0].has_dims);
  assert_int_equal(d.linear[0].in, 192);
  assert_int_equal(d.linear[0].out, 512);
  assert_int_equal(d.linear[0].act.kind, PP_ACT_GELU);
  assert_int_equal(d.linear[1].act.kind, PP_ACT_LEAKY_RELU);
  assert_float_equal(d.linear[1].act.slope, 0.2f, 1e-7);
  assert_false(d.linear[2].has_dims);
  assert_int_equal(d.linear[2].act.kind, PP_ACT_GELU_TANH);
  assert_int_equal(d.linear[3].act.kind, PP_ACT_SIGMOID);
  /* leaky_relu without a slope is PyTorch's default. */
  assert_int_equal(pp_model_desc_parse("linear, leaky_relu", &d, &msg), 0);
  assert_float_equal(d.linear[0].act.slope, 0.01f, 1e-9);
}

static void
expect_desc_error(const char *text, const char *needle)
{
  pp_model_desc d;
  char *msg = NULL;
  if (pp_model_desc_parse(text, &d, &msg) == 0)
    fail_msg("'%s' accepted; expected an error containing \"%s\"", text, needle);
  if (!strstr(msg, needle))
    fail_msg("'%s': message \"%s\" lacks \"%s\"", text, msg, needle);
  g_clear_pointer(&msg, g_free);
}

static void
test_desc_errors(void **state)
{
  (void) state;
  expect_desc_error("", "expected a name");
  expect_desc_error("linear, swish", "module 2: unknown module 'swish'");
  expect_desc_error("relu, linear", "module 1 (relu) comes before any Linear layer");
  expect_desc_error("linear, relu, tanh", "Linear layer 1 already has an activation");
  expect_desc_error("linear(3)", "expected linear or linear(IN,OUT)");
  expect_desc_error("linear(3,0)", "expected linear or linear(IN,OUT)");
  expect_desc_error("linear(4,3), linear(2,1)",
                    "Linear layer 2 takes 2 inputs but layer 1 gives 3");
  expect_desc_error("linear, leaky_relu(x)", "the slope 'x' is not a number");
  expect_desc_error("linear, gelu(fast)", "approximate is 'none' or 'tanh'");
  expect_desc_error("linear, relu(1)", "takes no arguments");
  expect_desc_error("linear relu", "expected ',' or the end");
  expect_desc_error("linear(3,4", "missing ')'");
  expect_desc_error("linear,linear,linear,linear,linear,linear,linear,linear,linear",
                    "more than 8 Linear layers");
}

int
main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_desc_grammar),
    cmocka_unit_test(test_desc_errors),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
