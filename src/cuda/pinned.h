/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Page-locked host memory: the frames' pools (through the module's table)
 * and the slots' own staging. Anonymous memory registered with
 * cudaHostRegister, so io_uring can register it too; portable, so every
 * context sees it pinned; mapped, so kernels can read it in place. */
#ifndef PP_CUDA_PINNED_H
#define PP_CUDA_PINNED_H

#include <stddef.h>

int pp_pinned_register(void *ptr, size_t bytes, char **msg);
void pp_pinned_unregister(void *ptr);

/* A slot's staging: mapped and registered as the frames' own memory is. */
void *pp_pinned_staging_alloc(size_t bytes, char **msg);
void pp_pinned_staging_free(void *ptr, size_t bytes);

#endif
