// SPDX-License-Identifier: LGPL-2.1-or-later
/* A module as pingpong's own are made (module_table.h): one exported
 * function returning a table whose first field is its ABI, here 42. */
#include <stdint.h>

typedef struct {
  uint32_t abi;
  const char *name;
} fake_table;

__attribute__((visibility("default"))) const fake_table *
pp_fake_module_entry(void)
{
  static const fake_table table = { 42, "fake" };
  return &table;
}
