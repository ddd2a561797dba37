// SPDX-License-Identifier: LGPL-2.1-or-later
/* Exit 0 when a CUDA device is usable, 77 (skipped) otherwise: for the GPU
 * suite's scripts. */
#include <cuda_runtime_api.h>
#include <stdio.h>

int
main(void)
{
  int devices = 0;
  const cudaError_t err = cudaGetDeviceCount(&devices);
  if (err != cudaSuccess || devices == 0) {
    fprintf(stderr, "skipped: no CUDA device (%s)\n",
            err != cudaSuccess ? cudaGetErrorString(err) : "none found");
    return 77;
  }
  return 0;
}
