/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* pp-cuda-start: what CUDA's own start costs in a fresh process, the floor
 * under any pipeline's start on the GPU: the driver (the first runtime
 * call), one context, loading cuBLASLt, and cuBLASLt's own first use (a
 * handle, then the first algorithm checked for a GEMM of the seed's shape:
 * cuBLASLt readies its kernels there), the last two with --cublaslt only.
 * Prints
 *   driver_ms=… context_ms=… [cublaslt_ms=… lt_first_ms=…]
 * bench/startup.sh runs it beside cudamlp's own start. */
#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <glib.h>
#include <stdio.h>

#include "timing.h"

/* cuBLASLt's first GEMM algorithm: a handle, one 1024×1024×1024 float
 * GEMM described, the heuristic's first answer checked; through dlsym, as
 * cudamlp's module reaches it (the program does not link it). */
#define LT(name) __typeof__(name) *name##_ = (__typeof__(name) *) dlsym(lt, #name)
static int
first_algorithm(void *lt)
{
  LT(cublasLtCreate);
  LT(cublasLtDestroy);
  LT(cublasLtMatmulDescCreate);
  LT(cublasLtMatmulDescDestroy);
  LT(cublasLtMatrixLayoutCreate);
  LT(cublasLtMatrixLayoutDestroy);
  LT(cublasLtMatmulAlgoGetHeuristic);
  LT(cublasLtMatmulAlgoCheck);
  LT(cublasLtMatmulPreferenceCreate);
  LT(cublasLtMatmulPreferenceDestroy);
  if (!cublasLtCreate_ || !cublasLtMatmulAlgoCheck_ || !cublasLtMatmulAlgoGetHeuristic_ ||
      !cublasLtMatmulPreferenceCreate_)
    return -1;
  cublasLtHandle_t handle;
  if (cublasLtCreate_(&handle) != CUBLAS_STATUS_SUCCESS)
    return -1;
  cublasLtMatmulDesc_t desc;
  cublasLtMatrixLayout_t a, b, c;
  cublasLtMatmulDescCreate_(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F);
  cublasLtMatrixLayoutCreate_(&a, CUDA_R_32F, 1024, 1024, 1024);
  cublasLtMatrixLayoutCreate_(&b, CUDA_R_32F, 1024, 1024, 1024);
  cublasLtMatrixLayoutCreate_(&c, CUDA_R_32F, 1024, 1024, 1024);
  cublasLtMatmulPreference_t preference;
  cublasLtMatmulPreferenceCreate_(&preference);
  cublasLtMatmulHeuristicResult_t result;
  int found = 0;
  cublasLtMatmulAlgoGetHeuristic_(handle, desc, a, b, c, c, preference, 1, &result, &found);
  cublasLtMatmulPreferenceDestroy_(preference);
  cublasLtMatmulHeuristicResult_t check;
  const int ok = found && cublasLtMatmulAlgoCheck_(handle, desc, a, b, c, c, &result.algo,
                                                   &check) == CUBLAS_STATUS_SUCCESS;
  cublasLtMatrixLayoutDestroy_(a);
  cublasLtMatrixLayoutDestroy_(b);
  cublasLtMatrixLayoutDestroy_(c);
  cublasLtMatmulDescDestroy_(desc);
  cublasLtDestroy_(handle);
  return ok ? 0 : -1;
}

int
main(int argc, char **argv)
{
  const int with_lt = argc > 1 && g_str_equal(argv[1], "--cublaslt");
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
  printf("driver_ms=%.1f context_ms=%.1f", (t1 - t0) / 1e6, (t2 - t1) / 1e6);
  if (with_lt) {
    void *lt = dlopen("libcublasLt.so." G_STRINGIFY(PP_CUDA_MAJOR), RTLD_NOW | RTLD_LOCAL);
    const int64_t t3 = pp_now_ns();
    const int first = lt ? first_algorithm(lt) : -1;
    const int64_t t4 = pp_now_ns();
    printf(" cublaslt_ms=%.1f lt_first_ms=%.1f", lt ? (t3 - t2) / 1e6 : -1.0,
           first == 0 ? (t4 - t3) / 1e6 : -1.0);
  }
  printf("\n");
  return 0;
}
