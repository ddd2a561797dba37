/* Picks and opens a backend, and allocates the host memory frames live in. */
#include "backend.h"

#include <errno.h>
#include <glib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cuda_host.h"

bool
pp_backend_have_cuda(void)
{
#ifdef PP_HAVE_CUDA
  return true;
#else
  return false;
#endif
}

#ifndef PP_HAVE_CUDA
int
pp_backend_cuda_new(const pp_backend_options *opts, pp_backend **out, char **msg)
{
  (void) opts;
  (void) out;
  *msg = g_strdup("this build of pingpong has no CUDA backend (nvcc was not found when it was "
                  "built; rebuild with -Dcuda=enabled)");
  return -ENOTSUP;
}

int
pp_cuda_host_register(void *ptr, size_t bytes, char **msg)
{
  (void) ptr;
  (void) bytes;
  *msg = g_strdup("pinned memory needs the CUDA backend, which this build lacks");
  return -ENOTSUP;
}

void
pp_cuda_host_unregister(void *ptr)
{
  (void) ptr;
}
#endif

int
pp_backend_open(const pp_backend_options *opts, pp_complete_fn complete, void *data,
                pp_backend **out, char **note, char **msg)
{
  pp_backend *b = NULL;
  int rc;
  switch (opts->kind) {
    case PP_BACKEND_CPU:
      rc = pp_backend_cpu_new(&b, msg);
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
        rc = pp_backend_cpu_new(&b, msg);
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

static size_t
page_round(size_t size)
{
  const size_t page = sysconf(_SC_PAGESIZE);
  return (size + page - 1) / page * page;
}

void *
pp_host_alloc(size_t size, bool pinned, char **msg)
{
  const size_t bytes = page_round(size ? size : 1);
  void *ptr = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (ptr == MAP_FAILED) {
    *msg = g_strdup_printf("cannot map %zu bytes of host memory: %s", bytes, g_strerror(errno));
    return NULL;
  }
  if (pinned && pp_cuda_host_register(ptr, bytes, msg) < 0) {
    munmap(ptr, bytes);
    return NULL;
  }
  return ptr;
}

void
pp_host_free(void *ptr, size_t size, bool pinned)
{
  if (!ptr)
    return;
  const size_t bytes = page_round(size ? size : 1);
  if (pinned)
    pp_cuda_host_unregister(ptr);
  munmap(ptr, bytes);
}
