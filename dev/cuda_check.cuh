// SPDX-License-Identifier: LGPL-2.1-or-later
/* The dev programs' CUDA check: an experiment has nothing to clean up, so
 * a failed call says where and ends the program. */
#ifndef PP_DEV_CUDA_CHECK_CUH
#define PP_DEV_CUDA_CHECK_CUH

#include <cstdio>
#include <cstdlib>

#include <cuda_runtime.h>

#define CHECK(x)                                                                                   \
  do {                                                                                             \
    cudaError_t err_ = (x);                                                                        \
    if (err_ != cudaSuccess) {                                                                     \
      fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(err_));         \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)

#endif
