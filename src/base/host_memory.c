// SPDX-License-Identifier: LGPL-2.1-or-later
/* Anonymous, page-aligned host memory for frames. */
#include "host_memory.h"

#include <errno.h>
#include <glib.h>
#include <sys/mman.h>
#include <unistd.h>

size_t
pp_host_mapped_bytes(size_t size)
{
  const size_t page = sysconf(_SC_PAGESIZE);
  return ((size ? size : 1) + page - 1) / page * page;
}

void *
pp_host_map(size_t size, char **msg)
{
  const size_t bytes = pp_host_mapped_bytes(size);
  void *ptr = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (ptr == MAP_FAILED) {
    *msg = g_strdup_printf("cannot map %zu bytes of host memory: %s", bytes, g_strerror(errno));
    return NULL;
  }
  return ptr;
}

void
pp_host_unmap(void *ptr, size_t size)
{
  if (ptr)
    munmap(ptr, pp_host_mapped_bytes(size));
}
