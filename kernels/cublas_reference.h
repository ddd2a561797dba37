/* The MLP through plain cuBLAS, each step its own call: conversion kernel,
 * cublasSgemm, bias(+ReLU) kernel, cublasSgemv (O = 1) or cublasSgemm, bias
 * + ReLU kernel. What "the same math with cuBLAS" costs: the benchmark's
 * yardstick for the MLP stage, and a second GPU reference in the tests. */
#ifndef PP_CUBLAS_REFERENCE_H
#define PP_CUBLAS_REFERENCE_H

#include <cublas_v2.h>

#include "cuda_kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
  const float *w0, *b0; /* D×K (nn.Linear layout), D or NULL */
  const float *w1, *b1; /* O×D, O or NULL */
  uint32_t k, d, o;
  bool hidden_relu;
} pp_reference_weights;

/* y[n×o] = ReLU(MLP(X)); x_scratch holds n×k floats (unused for float
 * input with ld == k), h_scratch n×d. The handle's stream is set to `stream`.
 * Returns a cublasStatus_t, or CUBLAS_STATUS_EXECUTION_FAILED when a kernel
 * launch fails. */
int pp_cublas_reference_mlp(cublasHandle_t handle, cudaStream_t stream, const pp_cuda_a *x,
                            uint32_t n, const pp_reference_weights *w, bool tf32, float *x_scratch,
                            float *h_scratch, float *y);

#ifdef __cplusplus
}
#endif

#endif
