/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The cuBLASLt module's GEMMs (lt_table.h). Row-major C[m×n] = X[m×k]·Wᵀ is
 * column-major Cᵀ[n×m] = (W as k×n)ᵀ · (X as k×m): A = W transposed, B = X,
 * and the bias runs along the n rows of Cᵀ. */
#include <cublasLt.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "../lt_table.h"

struct pp_lt_gemm {
  cublasLtHandle_t handle;
  cublasLtMatmulDesc_t desc;
  cublasLtMatrixLayout_t w_layout, x_layout, c_layout;
  cublasLtMatmulAlgo_t algo;
  float alpha;
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
  return s->tf32 && s->xw == PP_DTYPE_F32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
}

static cudaDataType_t
data_type(pp_dtype t)
{
  return t == PP_DTYPE_BF16 ? CUDA_R_16BF : t == PP_DTYPE_F16 ? CUDA_R_16F : CUDA_R_32F;
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
  g->alpha = s->alpha;
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
  TRY(cublasLtMatrixLayoutCreate(&g->w_layout, data_type(s->xw), s->k, s->n, s->k));
  TRY(cublasLtMatrixLayoutCreate(&g->x_layout, data_type(s->xw), s->k, s->m, s->ldx));
  TRY(cublasLtMatrixLayoutCreate(&g->c_layout, data_type(s->c), s->n, s->m, s->ldc));
  *out = g;
  return CUBLAS_STATUS_SUCCESS;
fail:
  gemm_free(g);
  return status;
}

/* The configuration attributes that make an algorithm, where each lives in
 * pp_gemm_algo, and the value a plan line leaves out (cuBLAS's default). */
static const struct {
  cublasLtMatmulAlgoConfigAttributes_t attr;
  size_t offset, size;
  int64_t fallback;
} algo_attrs[] = {
#define ATTR(attr, field, fallback)                                                                \
  {                                                                                                \
    attr, offsetof(pp_gemm_algo, field), sizeof(((pp_gemm_algo *) 0)->field), fallback             \
  }
  ATTR(CUBLASLT_ALGO_CONFIG_TILE_ID, tile, 0),
  ATTR(CUBLASLT_ALGO_CONFIG_STAGES_ID, stages, 0),
  ATTR(CUBLASLT_ALGO_CONFIG_SPLITK_NUM, splitk, 1),
  ATTR(CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, reduction, 0),
  ATTR(CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, swizzle, 0),
  ATTR(CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION, custom, 0),
  ATTR(CUBLASLT_ALGO_CONFIG_INNER_SHAPE_ID, inner, 0),
  ATTR(CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, cluster, 0),
#undef ATTR
};

#define N_ALGO_ATTRS (sizeof algo_attrs / sizeof algo_attrs[0])

/* A field of pp_gemm_algo (a 16- or 32-bit integer) as a wide value. */
static int64_t
field_value(const pp_gemm_algo *a, size_t i)
{
  const uint8_t *p = (const uint8_t *) a + algo_attrs[i].offset;
  if (algo_attrs[i].size == sizeof(uint16_t))
    return *(const uint16_t *) p;
  if (algo_attrs[i].attr == CUBLASLT_ALGO_CONFIG_SPLITK_NUM)
    return *(const int32_t *) p;
  return *(const uint32_t *) p;
}

/* An algorithm as its configuration attributes (cuda_plan.h). */
static void
algo_to_attrs(const cublasLtMatmulAlgo_t *algo, pp_gemm_algo *a)
{
  size_t written;
  *a = (pp_gemm_algo){ .splitk = 1 };
  cublasLtMatmulAlgoConfigGetAttribute(algo, CUBLASLT_ALGO_CONFIG_ID, &a->id, sizeof a->id,
                                       &written);
  for (size_t i = 0; i < N_ALGO_ATTRS; i++)
    cublasLtMatmulAlgoConfigGetAttribute(algo, algo_attrs[i].attr,
                                         (uint8_t *) a + algo_attrs[i].offset, algo_attrs[i].size,
                                         &written);
}

/* The algorithm rebuilt from its attributes; only those not at their
 * defaults are set, as the line leaves the defaults out. */
static cublasStatus_t
attrs_to_algo(cublasLtHandle_t handle, const pp_lt_shape *s, const pp_gemm_algo *a,
              cublasLtMatmulAlgo_t *algo)
{
  const cudaDataType_t xw = data_type(s->xw), c = data_type(s->c);
  cublasStatus_t status =
      cublasLtMatmulAlgoInit(handle, compute_type(s), CUDA_R_32F, xw, xw, c, c, a->id, algo);
  for (size_t i = 0; i < N_ALGO_ATTRS && status == CUBLAS_STATUS_SUCCESS; i++)
    if (field_value(a, i) != algo_attrs[i].fallback)
      status = cublasLtMatmulAlgoConfigSetAttribute(
          algo, algo_attrs[i].attr, (const uint8_t *) a + algo_attrs[i].offset, algo_attrs[i].size);
  return status;
}

/* Whether `a` rounds each result once, as the CPU backend does. At a
 * 16-bit C, split K does not: the in-place and output-type reductions add
 * rounded parts, and the compute-type one was measured a whole rounding
 * step off the once-rounded sums (a 50×777 layer, 12 splits). */
static bool
rounds_once(const pp_lt_shape *s, const pp_gemm_algo *a)
{
  return s->c == PP_DTYPE_F32 || a->splitk == 1 || a->splitk == 0;
}

static int
lt_plan(void *handle, const pp_lt_shape *shape, const pp_gemm_algo *algo, pp_lt_gemm **out)
{
  if (!rounds_once(shape, algo))
    return CUBLAS_STATUS_NOT_SUPPORTED;
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
  const int most = max < PP_LT_MAX_CANDIDATES ? max : PP_LT_MAX_CANDIDATES;
  int n = 0;
  *found = 0;
  cublasStatus_t status = describe(handle, shape, &g);
  if (status == CUBLAS_STATUS_SUCCESS)
    status = cublasLtMatmulPreferenceCreate(&pref);
  if (status == CUBLAS_STATUS_SUCCESS)
    status = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                  &workspace, sizeof workspace);
  if (status == CUBLAS_STATUS_SUCCESS)
    status = cublasLtMatmulAlgoGetHeuristic(handle, g->desc, g->w_layout, g->x_layout, g->c_layout,
                                            g->c_layout, pref, most, results, &n);
  /* Each candidate as its attributes rebuild it: what a plan will run;
   * one that splits K where that would round twice, unsplit (lt_plan
   * checks that cuBLAS runs it so). */
  for (int i = 0; status == CUBLAS_STATUS_SUCCESS && i < n; i++) {
    pp_gemm_algo *a = &algos[(*found)++];
    algo_to_attrs(&results[i].algo, a);
    if (!rounds_once(shape, a))
      a->splitk = 1, a->reduction = CUBLASLT_REDUCTION_SCHEME_NONE;
  }
  if (pref)
    cublasLtMatmulPreferenceDestroy(pref);
  gemm_free(g);
  if (status == CUBLAS_STATUS_SUCCESS && *found == 0)
    status = CUBLAS_STATUS_NOT_SUPPORTED;
  return status;
}

static int
lt_run(const pp_lt_gemm *g, cudaStream_t stream, const void *x, const void *w, void *c,
       void *workspace)
{
  const float zero = 0.0f;
  return cublasLtMatmul(g->handle, g->desc, &g->alpha, w, g->w_layout, x, g->x_layout, &zero, c,
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
