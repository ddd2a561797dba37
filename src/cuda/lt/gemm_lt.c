/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The cuBLASLt module's GEMMs (lt_table.h). Row-major C[m×n] = X[m×k]·Wᵀ is
 * column-major Cᵀ[n×m] = (W as k×n)ᵀ · (X as k×m): A = W transposed, B = X,
 * and the bias runs along the n rows of Cᵀ. */
#include <cublasLt.h>
#include <stdlib.h>
#include <string.h>

#include "../lt_table.h"

struct pp_lt_gemm {
  cublasLtHandle_t handle;
  cublasLtMatmulDesc_t desc;
  cublasLtMatrixLayout_t w_layout, x_layout, c_layout;
  cublasLtMatmulAlgo_t algo;
};

#define TRY(call)                                                                                  \
  do {                                                                                             \
    status = (call);                                                                               \
    if (status != CUBLAS_STATUS_SUCCESS)                                                           \
      goto fail;                                                                                   \
  } while (0)

static cublasComputeType_t
compute_type(const pp_lt_shape *s)
{
  return s->tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
}

static void
gemm_free(pp_lt_gemm *g)
{
  if (!g)
    return;
  if (g->c_layout)
    cublasLtMatrixLayoutDestroy(g->c_layout);
  if (g->x_layout)
    cublasLtMatrixLayoutDestroy(g->x_layout);
  if (g->w_layout)
    cublasLtMatrixLayoutDestroy(g->w_layout);
  if (g->desc)
    cublasLtMatmulDescDestroy(g->desc);
  free(g);
}

/* The descriptors of a GEMM of `shape`, without its algorithm. */
static cublasStatus_t
describe(cublasLtHandle_t handle, const pp_lt_shape *s, pp_lt_gemm **out)
{
  cublasStatus_t status;
  pp_lt_gemm *g = calloc(1, sizeof *g);
  if (!g)
    return CUBLAS_STATUS_ALLOC_FAILED;
  g->handle = handle;
  TRY(cublasLtMatmulDescCreate(&g->desc, compute_type(s), CUDA_R_32F));
  const cublasOperation_t transa = CUBLAS_OP_T, transb = CUBLAS_OP_N;
  TRY(cublasLtMatmulDescSetAttribute(g->desc, CUBLASLT_MATMUL_DESC_TRANSA, &transa, sizeof transa));
  TRY(cublasLtMatmulDescSetAttribute(g->desc, CUBLASLT_MATMUL_DESC_TRANSB, &transb, sizeof transb));
  const cublasLtEpilogue_t epilogue =
      s->bias ? (s->relu ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_BIAS)
              : (s->relu ? CUBLASLT_EPILOGUE_RELU : CUBLASLT_EPILOGUE_DEFAULT);
  TRY(cublasLtMatmulDescSetAttribute(g->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue,
                                     sizeof epilogue));
  if (s->bias)
    TRY(cublasLtMatmulDescSetAttribute(g->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &s->bias,
                                       sizeof s->bias));
  TRY(cublasLtMatrixLayoutCreate(&g->w_layout, CUDA_R_32F, s->k, s->n, s->k));
  TRY(cublasLtMatrixLayoutCreate(&g->x_layout, CUDA_R_32F, s->k, s->m, s->ldx));
  TRY(cublasLtMatrixLayoutCreate(&g->c_layout, CUDA_R_32F, s->n, s->m, s->ldc));
  *out = g;
  return CUBLAS_STATUS_SUCCESS;
fail:
  gemm_free(g);
  return status;
}

/* An algorithm as its configuration attributes (plan.h). */
static void
algo_to_attrs(const cublasLtMatmulAlgo_t *algo, pp_gemm_algo *a)
{
  size_t written;
  *a = (pp_gemm_algo){ .splitk = 1 };
  cublasLtMatmulAlgoConfigGetAttribute(algo, CUBLASLT_ALGO_CONFIG_ID, &a->id, sizeof a->id,
                                       &written);
  cublasLtMatmulAlgoConfigGetAttribute(algo, CUBLASLT_ALGO_CONFIG_TILE_ID, &a->tile, sizeof a->tile,
                                       &written);
  cublasLtMatmulAlgoConfigGetAttribute(algo, CUBLASLT_ALGO_CONFIG_STAGES_ID, &a->stages,
                                       sizeof a->stages, &written);
  cublasLtMatmulAlgoConfigGetAttribute(algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &a->splitk,
                                       sizeof a->splitk, &written);
  cublasLtMatmulAlgoConfigGetAttribute(algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, &a->reduction,
                                       sizeof a->reduction, &written);
  cublasLtMatmulAlgoConfigGetAttribute(algo, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, &a->swizzle,
                                       sizeof a->swizzle, &written);
  cublasLtMatmulAlgoConfigGetAttribute(algo, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION, &a->custom,
                                       sizeof a->custom, &written);
  cublasLtMatmulAlgoConfigGetAttribute(algo, CUBLASLT_ALGO_CONFIG_INNER_SHAPE_ID, &a->inner,
                                       sizeof a->inner, &written);
  cublasLtMatmulAlgoConfigGetAttribute(algo, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, &a->cluster,
                                       sizeof a->cluster, &written);
}

/* The algorithm rebuilt from its attributes; only those not at their
 * defaults are set, as the line leaves the defaults out. */
static cublasStatus_t
attrs_to_algo(cublasLtHandle_t handle, const pp_lt_shape *s, const pp_gemm_algo *a,
              cublasLtMatmulAlgo_t *algo)
{
  cublasStatus_t status = cublasLtMatmulAlgoInit(handle, compute_type(s), CUDA_R_32F, CUDA_R_32F,
                                                 CUDA_R_32F, CUDA_R_32F, CUDA_R_32F, a->id, algo);
  const int32_t splitk = a->splitk;
#define SET(attr, field, fallback)                                                                 \
  if (status == CUBLAS_STATUS_SUCCESS && (field) != (fallback))                                    \
  status = cublasLtMatmulAlgoConfigSetAttribute(algo, attr, &(field), sizeof(field))
  SET(CUBLASLT_ALGO_CONFIG_TILE_ID, a->tile, 0u);
  SET(CUBLASLT_ALGO_CONFIG_STAGES_ID, a->stages, 0u);
  SET(CUBLASLT_ALGO_CONFIG_SPLITK_NUM, splitk, 1);
  SET(CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, a->reduction, 0u);
  SET(CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, a->swizzle, 0u);
  SET(CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION, a->custom, 0u);
  SET(CUBLASLT_ALGO_CONFIG_INNER_SHAPE_ID, a->inner, 0);
  SET(CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, a->cluster, 0);
#undef SET
  return status;
}

static int
lt_plan(void *handle, const pp_lt_shape *shape, const pp_gemm_algo *algo, pp_lt_gemm **out)
{
  pp_lt_gemm *g = NULL;
  cublasStatus_t status = describe(handle, shape, &g);
  if (status == CUBLAS_STATUS_SUCCESS)
    status = attrs_to_algo(handle, shape, algo, &g->algo);
  cublasLtMatmulHeuristicResult_t check;
  if (status == CUBLAS_STATUS_SUCCESS)
    status = cublasLtMatmulAlgoCheck(handle, g->desc, g->w_layout, g->x_layout, g->c_layout,
                                     g->c_layout, &g->algo, &check);
  if (status == CUBLAS_STATUS_SUCCESS && check.workspaceSize > PP_LT_WORKSPACE_BYTES)
    status = CUBLAS_STATUS_NOT_SUPPORTED;
  if (status != CUBLAS_STATUS_SUCCESS) {
    gemm_free(g);
    return status;
  }
  *out = g;
  return CUBLAS_STATUS_SUCCESS;
}

static int
lt_candidates(void *handle, const pp_lt_shape *shape, pp_gemm_algo *algos, int max, int *found)
{
  pp_lt_gemm *g = NULL;
  cublasLtMatmulPreference_t pref = NULL;
  cublasLtMatmulHeuristicResult_t results[PP_LT_MAX_CANDIDATES];
  const size_t workspace = PP_LT_WORKSPACE_BYTES;
  int n = 0;
  *found = 0;
  cublasStatus_t status = describe(handle, shape, &g);
  if (status == CUBLAS_STATUS_SUCCESS)
    status = cublasLtMatmulPreferenceCreate(&pref);
  if (status == CUBLAS_STATUS_SUCCESS)
    status = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                  &workspace, sizeof workspace);
  if (status == CUBLAS_STATUS_SUCCESS)
    status = cublasLtMatmulAlgoGetHeuristic(
        handle, g->desc, g->w_layout, g->x_layout, g->c_layout, g->c_layout, pref,
        max < PP_LT_MAX_CANDIDATES ? max : PP_LT_MAX_CANDIDATES, results, &n);
  /* Each candidate as its attributes rebuild it: what a plan will run. */
  for (int i = 0; status == CUBLAS_STATUS_SUCCESS && i < n; i++)
    algo_to_attrs(&results[i].algo, &algos[(*found)++]);
  if (pref)
    cublasLtMatmulPreferenceDestroy(pref);
  gemm_free(g);
  if (status == CUBLAS_STATUS_SUCCESS && *found == 0)
    status = CUBLAS_STATUS_NOT_SUPPORTED;
  return status;
}

static int
lt_run(const pp_lt_gemm *g, cudaStream_t stream, const void *x, const void *w, float *c,
       void *workspace)
{
  const float one = 1.0f, zero = 0.0f;
  return cublasLtMatmul(g->handle, g->desc, &one, w, g->w_layout, x, g->x_layout, &zero, c,
                        g->c_layout, c, g->c_layout, &g->algo, workspace, PP_LT_WORKSPACE_BYTES,
                        stream);
}

static int
lt_create(void **handle)
{
  return cublasLtCreate((cublasLtHandle_t *) handle);
}

static void
lt_destroy(void *handle)
{
  if (handle)
    cublasLtDestroy(handle);
}

static size_t
lt_version(void)
{
  return cublasLtGetVersion();
}

static const char *
lt_status_string(int status)
{
  return cublasLtGetStatusString((cublasStatus_t) status);
}

static const pp_lt_table table = {
  .abi = PP_LT_ABI,
  .version = lt_version,
  .status_string = lt_status_string,
  .create = lt_create,
  .destroy = lt_destroy,
  .candidates = lt_candidates,
  .plan = lt_plan,
  .run = lt_run,
  .free = gemm_free,
};

/* The module's one exported symbol (PP_LT_ENTRY). */
__attribute__((visibility("default"))) const pp_lt_table *pp_lt_module_entry(void);

const pp_lt_table *
pp_lt_module_entry(void)
{
  return &table;
}
