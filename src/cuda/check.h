/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Every CUDA call is checked: a failure becomes -EIO and a message that
 * names the call, CUDA's words and where ("cudaMalloc failed: out of
 * memory (cudaErrorMemoryAllocation) [slot.c:80]"). */
#ifndef PP_CUDA_CHECK_H
#define PP_CUDA_CHECK_H

#include <cuda_runtime_api.h>

/* Puts "<what> failed: <why> [file:line]" into *msg unless a message is
 * there already (the first failure is the one worth reading); -EIO. */
int pp_cuda_fail_text(char **msg, const char *what, const char *why, const char *file, int line);
int pp_cuda_fail(char **msg, const char *what, cudaError_t err, const char *file, int line);

/* These need `msg` (char **) in scope. */
#define CUDA_CHECK(call)                                                                           \
  do {                                                                                             \
    const cudaError_t err_ = (call);                                                               \
    if (err_ != cudaSuccess)                                                                       \
      return pp_cuda_fail(msg, #call, err_, __FILE__, __LINE__);                                   \
  } while (0)

#endif
