/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Opening one of pingpong's modules and checking its table (module_table.h). */
#include "module_table.h"

#include <gmodule.h>

typedef const void *(*entry_fn)(void);

const void *
pp_module_table(const char *path, const char *symbol, uint32_t abi, const char *name,
                const char *load_hint, char **msg)
{
  GModule *module = g_module_open(path, G_MODULE_BIND_LOCAL);
  if (!module) {
    *msg =
        g_strdup_printf("cannot load %s: %s%s", name, g_module_error(), load_hint ? load_hint : "");
    return NULL;
  }
  g_module_make_resident(module);
  entry_fn entry = NULL;
  if (!g_module_symbol(module, symbol, (gpointer *) &entry) || !entry) {
    *msg = g_strdup_printf("%s is not pingpong's module for %s (no %s)", path, name, symbol);
    return NULL;
  }
  const uint32_t *table = entry();
  if (!table || *table != abi) {
    *msg = g_strdup_printf("%s was built for another version of pingpong (ABI %u, want %u); "
                           "reinstall it with the plugin",
                           path, table ? *table : 0, abi);
    return NULL;
  }
  return table;
}
