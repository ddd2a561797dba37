// SPDX-License-Identifier: LGPL-2.1-or-later
/* Page-locking host memory for the GPU's copy engines. Without CUDA in the
 * build these fail (register) or do nothing (unregister). */
#ifndef PP_CUDA_HOST_H
#define PP_CUDA_HOST_H

#include <stddef.h>

int pp_cuda_host_register(void *ptr, size_t bytes, char **msg);
void pp_cuda_host_unregister(void *ptr);

#endif
