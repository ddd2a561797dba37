/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The cuBLASLt module, opened on first use and its table checked. */
#include "lt_loader.h"

#include <dlfcn.h>
#include <gmodule.h>

#include "check.h"
#include "timing.h"

static const pp_lt_table *table;
static char *failure;

/* This module's own file, so the cuBLASLt module is found beside it (the
 * build tree and the install directory both keep them together). */
static char *
module_path(void)
{
  Dl_info self = { 0 };
  if (!dladdr((void *) module_path, &self) || !self.dli_fname)
    return g_strdup(PP_LT_MODULE_NAME);
  g_autofree char *dir = g_path_get_dirname(self.dli_fname);
  return g_build_filename(dir, PP_LT_MODULE_NAME, NULL);
}

static const pp_lt_table *
open_table(char **msg)
{
  g_autofree char *path = module_path();
  /* Resident: CUDA libraries do not survive being unloaded. */
  GModule *module = g_module_open(path, G_MODULE_BIND_LOCAL);
  if (!module) {
    *msg = g_strdup_printf("cannot load cuBLASLt through %s: %s", path, g_module_error());
    return NULL;
  }
  g_module_make_resident(module);
  pp_lt_entry_fn entry = NULL;
  if (!g_module_symbol(module, PP_LT_ENTRY, (gpointer *) &entry) || !entry) {
    *msg = g_strdup_printf("%s is not pingpong's cuBLASLt module", path);
    return NULL;
  }
  const pp_lt_table *t = entry();
  if (!t || t->abi != PP_LT_ABI) {
    *msg = g_strdup_printf("%s was built for another version of pingpong; reinstall it", path);
    return NULL;
  }
  return t;
}

const pp_lt_table *
pp_lt_get(double *load_ms, char **msg)
{
  static gsize done;
  if (load_ms)
    *load_ms = 0;
  if (g_once_init_enter(&done)) {
    const int64_t t0 = pp_now_ns();
    table = open_table(&failure);
    if (load_ms)
      *load_ms = (pp_now_ns() - t0) / 1e6;
    g_once_init_leave(&done, 1);
  }
  if (!table && msg)
    *msg = g_strdup(failure);
  return table;
}

int
pp_lt_fail(char **msg, const char *what, int status, const char *file, int line)
{
  const pp_lt_table *t = pp_lt_get(NULL, NULL);
  return pp_cuda_fail_text(msg, what, t ? t->status_string(status) : "cuBLASLt failed", file, line);
}
