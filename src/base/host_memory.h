// SPDX-License-Identifier: LGPL-2.1-or-later
/* Host memory for frames before any pinning: anonymous, page-aligned
 * mappings, which cudaHostRegister, O_DIRECT and io_uring's fixed buffers
 * all accept. Pinning is the CUDA module's (pp_host_alloc in backend.h). */
#ifndef PP_HOST_MEMORY_H
#define PP_HOST_MEMORY_H

#include <stddef.h>

/* What pp_host_map maps for `size` bytes: whole pages, at least one. */
size_t pp_host_mapped_bytes(size_t size);
void *pp_host_map(size_t size, char **msg);
void pp_host_unmap(void *ptr, size_t size);

#endif
