/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The CUDA driver calls for contexts, looked up once through the runtime. */
#include "driver.h"

#include <cuda_runtime_api.h>
#include <glib.h>

static void *
entry_point(const char *name)
{
  void *fn = NULL;
  enum cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
  if (cudaGetDriverEntryPointByVersion(name, &fn, 12000, cudaEnableDefault, &found) !=
          cudaSuccess ||
      found != cudaDriverEntryPointSuccess)
    return NULL;
  return fn;
}

const pp_cuda_driver *
pp_cuda_driver_get(void)
{
  static pp_cuda_driver driver;
  static const pp_cuda_driver *found;
  static gsize done;
  if (g_once_init_enter(&done)) {
    driver.ctx_get_current = (int (*)(void **)) entry_point("cuCtxGetCurrent");
    driver.ctx_set_current = (int (*)(void *)) entry_point("cuCtxSetCurrent");
    driver.ctx_get_device = (int (*)(int *)) entry_point("cuCtxGetDevice");
    if (driver.ctx_get_current && driver.ctx_set_current && driver.ctx_get_device)
      found = &driver;
    g_once_init_leave(&done, 1);
  }
  return found;
}
