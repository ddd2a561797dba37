// SPDX-License-Identifier: LGPL-2.1-or-later
/* Opening one of pingpong's modules (module_table.h), against a module
 * built for the test (fake_module.c, ABI 42): its table when everything
 * fits, and otherwise a message that says which step failed: no file, no
 * entry function, another ABI. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <glib.h>
#include <string.h>

#include "module_table.h"

typedef struct {
  uint32_t abi;
  const char *name;
} fake_table;

static const char *module_path;

static void
expect_failure(const char *path, const char *symbol, uint32_t abi, const char *needle)
{
  char *msg = NULL;
  assert_null(pp_module_table(path, symbol, abi, "the fake module", " (a hint)", &msg));
  assert_non_null(msg);
  if (!strstr(msg, needle))
    fail_msg("'%s' lacks '%s'", msg, needle);
  g_free(msg);
}

static void
test_table_when_it_fits(void **state)
{
  (void) state;
  char *msg = NULL;
  const fake_table *t =
      pp_module_table(module_path, "pp_fake_module_entry", 42, "the fake module", NULL, &msg);
  assert_non_null(t);
  assert_null(msg);
  assert_int_equal(t->abi, 42);
  assert_string_equal(t->name, "fake");
}

static void
test_each_failure_said(void **state)
{
  (void) state;
  expect_failure("/nonexistent/libnothing.so", "pp_fake_module_entry", 42,
                 "cannot load the fake module: ");
  expect_failure("/nonexistent/libnothing.so", "pp_fake_module_entry", 42, " (a hint)");
  expect_failure(module_path, "pp_other_entry", 42,
                 "is not pingpong's module for the fake module "
                 "(no pp_other_entry)");
  expect_failure(module_path, "pp_fake_module_entry", 41, "(ABI 42, want 41); reinstall it");
}

int
main(int argc, char **argv)
{
  if (argc != 2) {
    g_printerr("usage: test_module_table FAKE_MODULE.so\n");
    return 2;
  }
  module_path = argv[1];
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_table_when_it_fits),
    cmocka_unit_test(test_each_failure_said),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
