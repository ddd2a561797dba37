/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* pingpong's own shared modules (the CUDA backend, cuBLASLt), opened on
 * demand. Each exports one function returning a table whose first field
 * is the ABI number it was built with. */
#ifndef PP_MODULE_TABLE_H
#define PP_MODULE_TABLE_H

#include <stdint.h>

/* Opens the module file at `path` with local binding (its libraries'
 * symbols stay out of everyone else's way), kept loaded (CUDA libraries do
 * not survive being unloaded), and returns its table: what its entry
 * function `symbol` returns, once the table's ABI (its first uint32_t)
 * equals `abi`. NULL where a step fails, *msg saying which: `name` names
 * the module ("the CUDA backend"), `load_hint` is added where the file
 * does not load (its libraries missing, say). */
const void *pp_module_table(const char *path, const char *symbol, uint32_t abi, const char *name,
                            const char *load_hint, char **msg);

#endif
