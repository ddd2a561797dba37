/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* GEMMs through cuBLASLt, in a module of their own
 * (libpingpong-cublaslt.so, lt/) that the CUDA backend opens only when a
 * plan runs a layer on cuBLAS: loading cuBLASLt costs tens of
 * milliseconds of start-up, and most plans for small models never call it.
 *
 * One GEMM is C[m×n] = alpha·X[m×k]·Wᵀ + bias (ReLU fused where asked), all
 * row-major, W as nn.Linear stores it ([n×k]), X and W of one element type
 * and C of its own, summed in float32. Any other activation is the
 * caller's to apply after it. Statuses are cuBLAS's (cublasStatus_t). */
#ifndef PP_CUDA_LT_TABLE_H
#define PP_CUDA_LT_TABLE_H

#include <cuda_runtime_api.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cuda_plan.h"
#include "dtype.h"

/* Bumped whenever the table or what it passes changes shape. */
#define PP_LT_ABI 3
#define PP_LT_ENTRY "pp_lt_module_entry"
#define PP_LT_MODULE_NAME "libpingpong-cublaslt.so"
/* cuBLASLt's recommended workspace on Hopper, one per stream. */
#define PP_LT_WORKSPACE_BYTES (32u << 20)
/* Candidates asked of the heuristic. */
#define PP_LT_MAX_CANDIDATES 8

typedef struct {
  uint32_t m, k, n;
  uint32_t ldx, ldc;
  const void *bias; /* C's type; fixed with the plan: weights never move; NULL for none */
  bool relu;        /* ReLU in the epilogue */
  bool tf32;        /* float32 X and W on TF32 tensor cores adding in FP32; else FP32 */
  pp_dtype xw, c;   /* the element types of X and W, and of C */
  float alpha;      /* the products' scale: 1 but where X and W are scaled (split in FP16) */
} pp_lt_shape;

typedef struct pp_lt_gemm pp_lt_gemm;

typedef struct {
  uint32_t abi;
  /* cuBLASLt's version, for the plan cache (a cached algorithm is only
   * good for the version that gave it). */
  size_t (*version)(void);
  const char *(*status_string)(int status);
  int (*create)(void **handle);
  void (*destroy)(void *handle);
  /* Up to `max` algorithms cuBLAS's heuristic offers for the shape, best
   * guess first, each as it rebuilds (plan with it gives that algorithm). */
  int (*candidates)(void *handle, const pp_lt_shape *shape, pp_gemm_algo *algos, int max,
                    int *found);
  /* The GEMM with `algo` (checked against the shape: a cached algorithm
   * that this cuBLAS no longer has fails here). */
  int (*plan)(void *handle, const pp_lt_shape *shape, const pp_gemm_algo *algo, pp_lt_gemm **out);
  int (*run)(const pp_lt_gemm *g, cudaStream_t stream, const void *x, const void *w, void *c,
             void *workspace);
  void (*free)(pp_lt_gemm *g);
} pp_lt_table;

typedef const pp_lt_table *(*pp_lt_entry_fn)(void);

#endif
