/* Page-locked host memory for the CUDA backend: the frames' pool (through
 * the module's table) and the slots' own staging. */
#include <glib.h>

#include "backend_cuda_priv.h"
#include "host_memory.h"

/* Pinned memory is registered in, and unregistered from, the primary
 * context, whatever context the calling thread has current: a buffer may
 * be freed on any thread (an application's appsink) and after the
 * pipeline's shared context is gone, and an unregister in another context
 * than the register fails (cudaErrorHostMemoryNotRegistered, seen under
 * compute-sanitizer). Portable registration makes it pinned for every
 * context; mapped, kernels can also read and write it in place
 * (zero-copy, chunks.c). */
typedef int (*ctx_get_fn)(void **ctx);
typedef int (*ctx_set_fn)(void *ctx);
static ctx_get_fn ctx_get_current;
static ctx_set_fn ctx_set_current;

static void
find_context_calls(void)
{
  static gsize done;
  if (!g_once_init_enter(&done))
    return;
  void *get = NULL, *set = NULL;
  enum cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
  if (cudaGetDriverEntryPointByVersion("cuCtxGetCurrent", &get, 12000, cudaEnableDefault, &found) ==
          cudaSuccess &&
      found == cudaDriverEntryPointSuccess &&
      cudaGetDriverEntryPointByVersion("cuCtxSetCurrent", &set, 12000, cudaEnableDefault, &found) ==
          cudaSuccess &&
      found == cudaDriverEntryPointSuccess) {
    ctx_get_current = (ctx_get_fn) get;
    ctx_set_current = (ctx_set_fn) set;
  }
  g_once_init_leave(&done, 1);
}

/* Leaves the thread with no current context, so the runtime uses its
 * device's primary one; returns what was current, for restore_context. */
static void *
use_primary_context(void)
{
  find_context_calls();
  void *saved = NULL;
  if (ctx_get_current && ctx_get_current(&saved) == 0 && saved)
    ctx_set_current(NULL);
  return saved;
}

static void
restore_context(void *saved)
{
  if (saved)
    ctx_set_current(saved);
}

int
cuda_host_register(void *ptr, size_t bytes, char **msg)
{
  void *saved = use_primary_context();
  const cudaError_t err =
      cudaHostRegister(ptr, bytes, cudaHostRegisterPortable | cudaHostRegisterMapped);
  restore_context(saved);
  return err == cudaSuccess ? 0 : pp_cuda_fail(msg, "cudaHostRegister", err, __FILE__, __LINE__);
}

void
cuda_host_unregister(void *ptr)
{
  void *saved = use_primary_context();
  cudaHostUnregister(ptr);
  restore_context(saved);
}

/* A slot's staging memory: mapped like the frames' own (host_memory.h). */
void *
cuda_staging_alloc(size_t bytes, char **msg)
{
  void *ptr = pp_host_map(bytes, msg);
  if (ptr && cuda_host_register(ptr, pp_host_mapped_bytes(bytes), msg) < 0) {
    pp_host_unmap(ptr, bytes);
    return NULL;
  }
  return ptr;
}

void
cuda_staging_free(void *ptr, size_t bytes)
{
  if (ptr) {
    cuda_host_unregister(ptr);
    pp_host_unmap(ptr, bytes);
  }
}
