/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* pp-cuda-start: what CUDA's own start costs in a fresh process, the floor
 * under any pipeline's start on the GPU: the driver (the first runtime
 * call), one context, and loading cuBLASLt. Prints
 *   driver_ms=… context_ms=… cublaslt_ms=…
 * bench/startup.sh runs it beside cudamlp's own start. */
#include <cuda_runtime_api.h>
#include <gmodule.h>
#include <stdio.h>

#include "stats.h"

int
main(void)
{
  int count = 0;
  const int64_t t0 = pp_now_ns();
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    fprintf(stderr, "pp-cuda-start: no CUDA device\n");
    return 77;
  }
  const int64_t t1 = pp_now_ns();
  if (cudaSetDevice(0) != cudaSuccess || cudaFree(0) != cudaSuccess) {
    fprintf(stderr, "pp-cuda-start: no context\n");
    return 1;
  }
  const int64_t t2 = pp_now_ns();
  GModule *lt = g_module_open("libcublasLt.so." G_STRINGIFY(PP_CUDA_MAJOR), G_MODULE_BIND_LOCAL);
  const int64_t t3 = pp_now_ns();
  printf("driver_ms=%.1f context_ms=%.1f cublaslt_ms=%.1f\n", (t1 - t0) / 1e6, (t2 - t1) / 1e6,
         lt ? (t3 - t2) / 1e6 : -1.0);
  return 0;
}
