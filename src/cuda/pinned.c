/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Page-locked host memory: registering and unregistering anonymous mappings
 * with CUDA. */
#include "pinned.h"

#include <cuda_runtime_api.h>
#include <glib.h>

#include "check.h"
#include "driver.h"
#include "host_memory.h"

/* Memory is registered in, and unregistered from, the device's primary
 * context whatever context the calling thread has current: a buffer may be
 * freed on any thread (an application's appsink) and after a pipeline's
 * shared context is gone, and an unregister in another context than the
 * register fails (cudaErrorHostMemoryNotRegistered). The backend runs in
 * the primary context unless an application gives it another, so this
 * makes no second context. */
static void *
use_primary_context(void)
{
  const pp_cuda_driver *drv = pp_cuda_driver_get();
  void *saved = NULL;
  if (drv && drv->ctx_get_current(&saved) == 0 && saved)
    drv->ctx_set_current(NULL);
  return saved;
}

static void
restore_context(void *saved)
{
  if (saved)
    pp_cuda_driver_get()->ctx_set_current(saved);
}

int
pp_pinned_register(void *ptr, size_t bytes, char **msg)
{
  void *saved = use_primary_context();
  const cudaError_t err =
      cudaHostRegister(ptr, bytes, cudaHostRegisterPortable | cudaHostRegisterMapped);
  restore_context(saved);
  return err == cudaSuccess ? 0 : pp_cuda_fail(msg, "cudaHostRegister", err, __FILE__, __LINE__);
}

void
pp_pinned_unregister(void *ptr)
{
  void *saved = use_primary_context();
  cudaHostUnregister(ptr);
  restore_context(saved);
}

void *
pp_pinned_staging_alloc(size_t bytes, char **msg)
{
  void *ptr = pp_host_map(bytes, msg);
  if (ptr && pp_pinned_register(ptr, pp_host_mapped_bytes(bytes), msg) < 0) {
    pp_host_unmap(ptr, bytes);
    return NULL;
  }
  return ptr;
}

void
pp_pinned_staging_free(void *ptr, size_t bytes)
{
  if (ptr) {
    pp_pinned_unregister(ptr);
    pp_host_unmap(ptr, bytes);
  }
}
