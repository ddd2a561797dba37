/* GEMM through cuBLASLt with the bias (and ReLU) fused into its epilogue,
 * any other activation applied by a kernel after it:
 * C[m×n] = act(X[m×k] · Wᵀ + bias), all row-major, W as nn.Linear stores it
 * ([n×k]). Planned once per shape (the algorithm chosen by timing cuBLAS's
 * best candidates), then run per frame on any stream with that stream's own
 * workspace. */
#ifndef PP_GEMM_CUBLASLT_H
#define PP_GEMM_CUBLASLT_H

#include <cublasLt.h>
#include <stdbool.h>
#include <stdint.h>

#include "activation.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pp_lt_gemm pp_lt_gemm;

/* How X and W (floats) multiply: in FP32, or on TF32 tensor cores adding
 * in FP32. C and the bias are floats. */
typedef enum {
  PP_LT_FP32,
  PP_LT_TF32,
} pp_lt_math;

/* Runs of each candidate algorithm timed to choose one. 0 takes cuBLAS's
 * first candidate untimed: for compute-sanitizer runs, where each GEMM is
 * hundreds of times slower and which algorithm runs does not matter. */
#define PP_LT_TUNE_REPS 5

/* `bias` is fixed at plan time (weights never move). X's rows are ldx
 * elements apart, W's k. Returns the cuBLAS
 * status; `tune_stream`, `x`, `w`, `c` and `workspace` are used to time the
 * candidate algorithms, `tune_reps` runs each. */
cublasStatus_t pp_lt_gemm_plan(cublasLtHandle_t handle, uint32_t m, uint32_t k, uint32_t n,
                               uint32_t ldx, uint32_t ldc, const float *bias, pp_act act,
                               pp_lt_math math, size_t workspace_bytes, cudaStream_t tune_stream,
                               unsigned tune_reps, const void *x, const void *w, float *c,
                               void *workspace, pp_lt_gemm **out);

cublasStatus_t pp_lt_gemm_run(const pp_lt_gemm *g, cudaStream_t stream, const void *x,
                              const void *w, float *c, void *workspace);

void pp_lt_gemm_destroy(pp_lt_gemm *g);

#ifdef __cplusplus
}
#endif

#endif
