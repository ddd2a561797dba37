/* Picks and opens a backend, and allocates the host memory frames live in. */
#include "backend.h"

#include <errno.h>
#include <glib.h>

#include "cuda_host.h"
#include "host_memory.h"

bool
pp_backend_have_cuda(void)
{
#ifdef PP_HAVE_CUDA
  return true;
#else
  return false;
#endif
}

int
pp_backend_open(const pp_backend_options *opts, pp_complete_fn complete, void *data,
                pp_backend **out, char **note, char **msg)
{
  pp_backend *b = NULL;
  int rc;
  switch (opts->kind) {
    case PP_BACKEND_CPU:
      rc = pp_backend_cpu_new(opts, &b, msg);
      break;
    case PP_BACKEND_CUDA:
      rc = pp_backend_cuda_new(opts, &b, msg);
      break;
    case PP_BACKEND_AUTO:
    default: {
      char *why = NULL;
      rc = pp_backend_cuda_new(opts, &b, &why);
      if (rc < 0) {
        if (note)
          *note = g_strdup_printf("no usable CUDA device (%s); running on the CPU backend", why);
        g_free(why);
        rc = pp_backend_cpu_new(opts, &b, msg);
      }
      break;
    }
  }
  if (rc < 0)
    return rc;
  b->complete = complete;
  b->complete_data = data;
  *out = b;
  return 0;
}

void *
pp_host_alloc(size_t size, bool pinned, char **msg)
{
  void *ptr = pp_host_map(size, msg);
  if (ptr && pinned && pp_cuda_host_register(ptr, pp_host_mapped_bytes(size), msg) < 0) {
    pp_host_unmap(ptr, size);
    return NULL;
  }
  return ptr;
}

void
pp_host_free(void *ptr, size_t size, bool pinned)
{
  if (!ptr)
    return;
  if (pinned)
    pp_cuda_host_unregister(ptr);
  pp_host_unmap(ptr, size);
}
