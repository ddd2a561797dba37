/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The cuBLASLt module, opened on first use and its table checked. */
#include "lt_loader.h"

#include <dlfcn.h>
#include <glib.h>

#include "check.h"
#include "module_table.h"
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
  return pp_module_table(path, PP_LT_ENTRY, PP_LT_ABI, "cuBLASLt", NULL, msg);
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
      *load_ms = pp_ms_since(t0);
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
