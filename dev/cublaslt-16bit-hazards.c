// SPDX-License-Identifier: LGPL-2.1-or-later
/* cuBLASLt's 16-bit GEMM alone, BF16 or FP16, called as a first layer of
 * pieces calls it (X·Wᵀ, 16 bits in, FP32 out, with and without the bias +
 * ReLU epilogue), every heuristic candidate once, each result checked
 * against a float64 reference on the host.
 *
 *   build/dev/cublaslt-16bit-hazards [ROWS [bf16|fp16]]   (1024: seed's frame; bf16)
 *   compute-sanitizer --tool racecheck build/dev/cublaslt-16bit-hazards 256 fp16
 *
 * It answers whether racecheck still reports shared-memory hazards inside
 * cuBLAS's own 16-bit kernels (nvjet_sm90_tss_* in BF16, nvjet_sm90_hss_*
 * in FP16) with none of the project's code around them: how to tell them
 * from hazards of ours when racecheck runs on the split path's FP16 pieces
 * or a 16-bit precision's layers. Exit status 1 if any candidate's result
 * is wrong, 2 if a call fails. */
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(call)                                                                                \
  do {                                                                                             \
    const int err_ = (int) (call);                                                                 \
    if (err_ != 0) {                                                                               \
      fprintf(stderr, "%s:%d: %s failed (%d)\n", __FILE__, __LINE__, #call, err_);                 \
      exit(2);                                                                                     \
    }                                                                                              \
  } while (0)

enum { K = 3 * 1024, N = 1024, CANDIDATES = 8 };
static const size_t WORKSPACE = 32u << 20;

/* Values exact in BF16: its top 16 bits are the whole float. */
static uint16_t
bf16_bits(float v)
{
  uint32_t u;
  memcpy(&u, &v, sizeof u);
  return (uint16_t) (u >> 16);
}

/* Values exact in FP16 and within its normal range (fill's are): the
 * sign, the exponent rebased from 127 to 15, the top 10 significand bits. */
static uint16_t
fp16_bits(float v)
{
  uint32_t u;
  memcpy(&u, &v, sizeof u);
  if ((u & 0x7fffffffu) == 0)
    return (uint16_t) (u >> 16);
  return (uint16_t) ((u >> 16 & 0x8000u) | ((((u >> 23) & 0xffu) - 112u) << 10) |
                     (u >> 13 & 0x3ffu));
}

/* A frame's centred bytes (−128..127) and weight pieces (multiples of 2⁻⁸
 * below 0.25 in size), as the split path's operands are: exact in both
 * types. */
static void
fill(float *x, size_t nx, float *w, size_t nw, float *bias)
{
  uint32_t s = 12345;
  for (size_t i = 0; i < nx; i++) {
    s = s * 1664525u + 1013904223u;
    x[i] = (float) ((int) (s >> 24) - 128);
  }
  for (size_t i = 0; i < nw; i++) {
    s = s * 1664525u + 1013904223u;
    w[i] = (float) ((int) (s >> 25) - 64) / 256.0f;
  }
  for (int i = 0; i < N; i++) {
    s = s * 1664525u + 1013904223u;
    bias[i] = (float) ((int) (s >> 22) - 512) / 8.0f;
  }
}

int
main(int argc, char **argv)
{
  const int m = argc > 1 ? atoi(argv[1]) : 1024;
  const char *type = argc > 2 ? argv[2] : "bf16";
  const bool fp16 = strcmp(type, "fp16") == 0;
  if (m <= 0 || (!fp16 && strcmp(type, "bf16") != 0)) {
    fprintf(stderr, "usage: %s [ROWS [bf16|fp16]]\n", argv[0]);
    return 2;
  }
  uint16_t (*bits)(float) = fp16 ? fp16_bits : bf16_bits;
  const cudaDataType_t data_type = fp16 ? CUDA_R_16F : CUDA_R_16BF;
  float *x = malloc((size_t) m * K * sizeof *x), *w = malloc((size_t) N * K * sizeof *w);
  float *bias = malloc(N * sizeof *bias), *c = malloc((size_t) m * N * sizeof *c);
  double *ref = malloc((size_t) m * N * sizeof *ref), *mag = malloc((size_t) m * N * sizeof *mag);
  uint16_t *xb = malloc((size_t) m * K * 2), *wb = malloc((size_t) N * K * 2);
  if (!x || !w || !bias || !c || !ref || !mag || !xb || !wb)
    return 2;
  fill(x, (size_t) m * K, w, (size_t) N * K, bias);
  for (size_t i = 0; i < (size_t) m * K; i++)
    xb[i] = bits(x[i]);
  for (size_t i = 0; i < (size_t) N * K; i++)
    wb[i] = bits(w[i]);
  for (int r = 0; r < m; r++)
    for (int j = 0; j < N; j++) {
      double s = 0, a = 0;
      for (int k = 0; k < K; k++) {
        const double p = (double) x[(size_t) r * K + k] * w[(size_t) j * K + k];
        s += p;
        a += fabs(p);
      }
      ref[(size_t) r * N + j] = s;
      mag[(size_t) r * N + j] = a + fabs(bias[j]);
    }

  cudaStream_t stream;
  void *dx, *dw, *dws;
  float *dc, *dbias;
  CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  CHECK(cudaMalloc(&dx, (size_t) m * K * 2));
  CHECK(cudaMalloc(&dw, (size_t) N * K * 2));
  CHECK(cudaMalloc((void **) &dc, (size_t) m * N * sizeof *dc));
  CHECK(cudaMalloc((void **) &dbias, N * sizeof *dbias));
  CHECK(cudaMalloc(&dws, WORKSPACE));
  CHECK(cudaMemcpy(dx, xb, (size_t) m * K * 2, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(dw, wb, (size_t) N * K * 2, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(dbias, bias, N * sizeof *dbias, cudaMemcpyHostToDevice));

  cublasLtHandle_t lt;
  CHECK(cublasLtCreate(&lt));
  /* Row-major C[m×N] = X·Wᵀ is column-major Cᵀ = Wᵀ·X, as src/cuda/lt/gemm_lt.c. */
  cublasLtMatrixLayout_t wl, xl, cl;
  CHECK(cublasLtMatrixLayoutCreate(&wl, data_type, K, N, K));
  CHECK(cublasLtMatrixLayoutCreate(&xl, data_type, K, m, K));
  CHECK(cublasLtMatrixLayoutCreate(&cl, CUDA_R_32F, N, m, N));
  cublasLtMatmulPreference_t pref;
  CHECK(cublasLtMatmulPreferenceCreate(&pref));
  CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                             &WORKSPACE, sizeof WORKSPACE));
  int wrong = 0;
  const cublasLtEpilogue_t epilogues[] = { CUBLASLT_EPILOGUE_RELU_BIAS, CUBLASLT_EPILOGUE_DEFAULT };
  for (int e = 0; e < 2; e++) {
    const bool relu_bias = epilogues[e] == CUBLASLT_EPILOGUE_RELU_BIAS;
    cublasLtMatmulDesc_t desc;
    const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    CHECK(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogues[e],
                                         sizeof epilogues[e]));
    if (relu_bias)
      CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &dbias,
                                           sizeof dbias));
    cublasLtMatmulHeuristicResult_t results[CANDIDATES];
    int found = 0;
    CHECK(cublasLtMatmulAlgoGetHeuristic(lt, desc, wl, xl, cl, cl, pref, CANDIDATES, results,
                                         &found));
    for (int i = 0; i < found; i++) {
      const float one = 1.0f, zero = 0.0f;
      CHECK(cudaMemsetAsync(dc, 0xff, (size_t) m * N * sizeof *dc, stream));
      CHECK(cublasLtMatmul(lt, desc, &one, dw, wl, dx, xl, &zero, dc, cl, dc, cl, &results[i].algo,
                           dws, WORKSPACE, stream));
      CHECK(cudaStreamSynchronize(stream));
      CHECK(cudaMemcpy(c, dc, (size_t) m * N * sizeof *c, cudaMemcpyDeviceToHost));
      /* FP32 sums of exact products: a few ulps of the terms' magnitude. */
      double worst = 0;
      for (size_t t = 0; t < (size_t) m * N; t++) {
        double want = ref[t] + (relu_bias ? bias[t % N] : 0.0);
        if (relu_bias && want < 0)
          want = 0;
        const double err = fabs(c[t] - want) / mag[t];
        if (!(err <= worst))
          worst = err; /* NaN sticks */
      }
      const bool ok = worst <= 1e-5;
      wrong += !ok;
      printf(
          "%s %s, candidate %d of %d: largest error %.2e of the terms' magnitude (bound 1e-5) %s\n",
          type, relu_bias ? "bias+ReLU" : "plain", i + 1, found, worst, ok ? "ok" : "WRONG");
    }
    cublasLtMatmulDescDestroy(desc);
  }
  cublasLtMatmulPreferenceDestroy(pref);
  cublasLtMatrixLayoutDestroy(cl);
  cublasLtMatrixLayoutDestroy(xl);
  cublasLtMatrixLayoutDestroy(wl);
  cublasLtDestroy(lt);
  cudaFree(dws);
  cudaFree(dbias);
  cudaFree(dc);
  cudaFree(dw);
  cudaFree(dx);
  cudaStreamDestroy(stream);
  free(x);
  free(w);
  free(bias);
  free(c);
  free(ref);
  free(mag);
  free(xb);
  free(wb);
  return wrong ? 1 : 0;
}
