// SPDX-License-Identifier: LGPL-2.1-or-later
/* The MLP through plain cuBLAS, each step its own call: conversion kernel,
 * then per layer cublasSgemm (cublasSgemv for a last layer with one
 * output) and a bias + activation kernel. What "the same math with cuBLAS"
 * costs: the benchmark's yardstick for the MLP stage, and a second GPU
 * reference in the tests. */
#ifndef PP_CUBLAS_REFERENCE_H
#define PP_CUBLAS_REFERENCE_H

#include <cublas_v2.h>

#include "cuda_kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
  const void *w;  /* out×in (nn.Linear layout) of the call's dtype; device */
  const float *b; /* out, or NULL; device */
  uint32_t in, out;
  pp_act act;
} pp_reference_layer;

/* y[n×out] = the layers applied to X (n × layers[0].in); x_scratch holds
 * n×in values (unused for float input with ld == in at float32),
 * h_scratch[0] and [1] n × the widest hidden layer. At a 16-bit `dtype` X,
 * the weights and the activations are of that type (cublasGemmEx adding
 * in float32), y float. The handle's stream is set to `stream`.
 * Returns a cublasStatus_t, or CUBLAS_STATUS_EXECUTION_FAILED when a kernel
 * launch fails. */
int pp_cublas_reference_mlp(cublasHandle_t handle, cudaStream_t stream, const pp_cuda_a *x,
                            uint32_t n, const pp_reference_layer *layers, unsigned n_layers,
                            bool tf32, pp_dtype dtype, void *x_scratch, void *const h_scratch[2],
                            float *y);

#ifdef __cplusplus
}
#endif

#endif
