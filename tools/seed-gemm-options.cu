/* seed-gemm-options: what seed's first layer (1024 samples × 1024 byte
 * inputs → 1024 hidden, bias + ReLU) could run as on this GPU, in µs
 * (median of 21, CUDA events), FP32 and TF32:
 *
 *   - each of cuBLASLt's candidates for the whole GEMM, and split-K forced
 *     on the first eight (the planner times the first eight, unforced);
 *   - the GEMM on row halves and quarters, one after another and on
 *     concurrent streams (chunks that overlap each other);
 *   - the whole chain per chunk: the bytes' upload, the conversion to
 *     floats and the GEMM, chunk j's GEMM on its own stream as soon as its
 *     bytes are there (chunks that overlap the upload);
 *   - the conversion reading the bytes from pinned host memory in place,
 *     against the upload and the conversion on the device;
 *   - FP32 results from tensor cores (split_section): the bytes are
 *     integers, exact in TF32 and BF16, so with the conversion's scale
 *     folded into W and W split into pieces each exact in the narrow type,
 *     [U U]·[W_hi W_lo]ᵀ (TF32) or [U U U]·[W_hi W_mid W_lo]ᵀ (BF16) is
 *     X·Wᵀ to FP32's accuracy, the pieces along K; with each GEMM's error
 *     against a float64 reference.
 *
 *   seed-gemm-options
 *
 * Inputs are not zeros (the GPU's clocks do not care, its power might). */
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstring>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CHECK(call)                                                                                \
  do {                                                                                             \
    const cudaError_t err_ = (call);                                                               \
    if (err_ != cudaSuccess) {                                                                     \
      fprintf(stderr, "%s: %s\n", #call, cudaGetErrorString(err_));                                \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)
#define BLAS(call)                                                                                 \
  do {                                                                                             \
    const cublasStatus_t status_ = (call);                                                         \
    if (status_ != CUBLAS_STATUS_SUCCESS) {                                                        \
      fprintf(stderr, "%s: status %d\n", #call, (int) status_);                                    \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)

enum { M = 1024, K = 1024, N = 1024, REPS = 21, MAX_PIECES = 4, CANDIDATES = 16 };
static const size_t WORKSPACE = 32u << 20;

static cudaStream_t main_stream, piece_stream[MAX_PIECES];
static cudaEvent_t t0, t1, fork_ev, piece_ev[MAX_PIECES];

/* Median µs of f() enqueued on main_stream (f may fork to piece_stream),
 * or -1 when it fails. */
template <class F>
static float
time_us(F f)
{
  f();
  if (cudaStreamSynchronize(main_stream) != cudaSuccess || cudaGetLastError() != cudaSuccess)
    return -1;
  std::vector<float> v;
  for (int r = 0; r < REPS; r++) {
    cudaEventRecord(t0, main_stream);
    f();
    cudaEventRecord(t1, main_stream);
    float ms = 0;
    CHECK(cudaEventSynchronize(t1));
    CHECK(cudaEventElapsedTime(&ms, t0, t1));
    v.push_back(ms * 1000);
  }
  std::sort(v.begin(), v.end());
  return v[REPS / 2];
}

__global__ void
bytes_to_floats(const uchar4 *in, float4 *out, size_t n4)
{
  for (size_t i = blockIdx.x * (size_t) blockDim.x + threadIdx.x; i < n4;
       i += (size_t) gridDim.x * blockDim.x) {
    const uchar4 u = in[i];
    out[i] = make_float4(u.x / 255.f, u.y / 255.f, u.z / 255.f, u.w / 255.f);
  }
}

static void
convert(const unsigned char *bytes, float *x, size_t n, cudaStream_t stream)
{
  bytes_to_floats<<<264, 256, 0, stream>>>((const uchar4 *) bytes, (float4 *) x, n / 4);
}

/* C[rows×N] = relu(X[rows×K]·Wᵀ + b), row-major, as pp_lt_gemm plans it. */
struct gemm {
  cublasLtMatmulDesc_t desc;
  cublasLtMatrixLayout_t w, x, c;
  std::vector<cublasLtMatmulAlgo_t> algos;
};

static gemm
plan_typed(cublasLtHandle_t lt, cublasComputeType_t compute, cudaDataType_t in_type, int k,
           int rows, const float *bias, size_t workspace)
{
  gemm g;
  BLAS(cublasLtMatmulDescCreate(&g.desc, compute, CUDA_R_32F));
  const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
  const cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_RELU_BIAS;
  BLAS(cublasLtMatmulDescSetAttribute(g.desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
  BLAS(cublasLtMatmulDescSetAttribute(g.desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
  BLAS(cublasLtMatmulDescSetAttribute(g.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue,
                                      sizeof epilogue));
  BLAS(cublasLtMatmulDescSetAttribute(g.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias,
                                      sizeof bias));
  BLAS(cublasLtMatrixLayoutCreate(&g.w, in_type, k, N, k));
  BLAS(cublasLtMatrixLayoutCreate(&g.x, in_type, k, rows, k));
  BLAS(cublasLtMatrixLayoutCreate(&g.c, CUDA_R_32F, N, rows, N));
  cublasLtMatmulPreference_t pref;
  BLAS(cublasLtMatmulPreferenceCreate(&pref));
  BLAS(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                            &workspace, sizeof workspace));
  cublasLtMatmulHeuristicResult_t found[CANDIDATES];
  int n = 0;
  BLAS(cublasLtMatmulAlgoGetHeuristic(lt, g.desc, g.w, g.x, g.c, g.c, pref, CANDIDATES, found, &n));
  for (int i = 0; i < n; i++)
    g.algos.push_back(found[i].algo);
  cublasLtMatmulPreferenceDestroy(pref);
  return g;
}

static gemm
plan(cublasLtHandle_t lt, bool tf32, int rows, const float *bias, size_t workspace)
{
  return plan_typed(lt, tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F, CUDA_R_32F, K,
                    rows, bias, workspace);
}

static int
split_k(const cublasLtMatmulAlgo_t &algo)
{
  int k = 1;
  size_t size;
  cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &k, sizeof k, &size);
  return k;
}

/* Row r of `out` is row r of the bytes less `shift`, `copies` times over, as T. */
template <class T>
__global__ void
bytes_repeated(const unsigned char *in, T *out, int k, int copies, float shift)
{
  const unsigned char *src = in + (size_t) blockIdx.x * k;
  T *dst = out + (size_t) blockIdx.x * k * copies;
  for (int j = threadIdx.x; j < k; j += blockDim.x) {
    const T v = (T) ((float) src[j] - shift);
    for (int c = 0; c < copies; c++)
      dst[c * k + j] = v;
  }
}

/* The nearest TF32 (10-bit mantissa) to f, as a float. */
static float
tf32_nearest(float f)
{
  uint32_t u;
  memcpy(&u, &f, 4);
  u = (u + 0x1000u) & ~0x1fffu;
  memcpy(&f, &u, 4);
  return f;
}

/* ‖C − ref‖ / ‖ref‖ over the first `rows` rows, ref = relu(bytes/255 · Wᵀ + b) in float64. */
static double
error_vs_float64(const float *c_dev, const unsigned char *bytes, const std::vector<float> &w,
                 const std::vector<float> &b, int rows)
{
  std::vector<float> c((size_t) rows * N);
  CHECK(cudaMemcpy(c.data(), c_dev, sizeof(float) * c.size(), cudaMemcpyDeviceToHost));
  double diff = 0, norm = 0;
  for (int r = 0; r < rows; r++)
    for (int n = 0; n < N; n++) {
      double ref = b[n];
      for (int k = 0; k < K; k++)
        ref += bytes[(size_t) r * K + k] / 255.0 * w[(size_t) n * K + k];
      ref = ref > 0 ? ref : 0;
      const double d = c[(size_t) r * N + n] - ref;
      diff += d * d;
      norm += ref * ref;
    }
  return sqrt(diff / norm);
}

/* The best of the plan's candidates: µs, and C left by that candidate. */
template <class T>
static float
best_gemm(cublasLtHandle_t lt, gemm &g, const T *w, const T *x, float *c, char *workspace)
{
  const float one = 1, zero = 0;
  float best = -1;
  size_t best_i = 0;
  for (size_t i = 0; i < g.algos.size(); i++) {
    const float us = time_us([&] {
      cublasLtMatmul(lt, g.desc, &one, w, g.w, x, g.x, &zero, c, g.c, c, g.c, &g.algos[i],
                     workspace, WORKSPACE, main_stream);
    });
    if (us > 0 && (best < 0 || us < best)) {
      best = us;
      best_i = i;
    }
  }
  if (best > 0) {
    cublasLtMatmul(lt, g.desc, &one, w, g.w, x, g.x, &zero, c, g.c, c, g.c, &g.algos[best_i],
                   workspace, WORKSPACE, main_stream);
    CHECK(cudaStreamSynchronize(main_stream));
  }
  return best;
}

/* FP32 from tensor cores: the scale 1/255 folded into W, W split into
 * pieces exact in TF32 (2) or BF16 (3), the frame's bytes repeated once per
 * piece along K. Times and errors beside FP32's and TF32's own. */
static void
split_section(cublasLtHandle_t lt, const unsigned char *host_bytes, const unsigned char *dev_bytes,
              const float *x, const float *w, const float *bias, float *c, char *workspace,
              const std::vector<float> &w_host)
{
  const int check_rows = 64;
  const std::vector<float> b_host(w_host.begin(), w_host.begin() + N);
  for (int tf32 = 0; tf32 < 2; tf32++) {
    gemm g = plan(lt, tf32, M, bias, WORKSPACE);
    const float us = best_gemm(lt, g, w, x, c, workspace);
    printf("%s GEMM: %.1f µs, error %.2e\n", tf32 ? "TF32" : "FP32", us,
           error_vs_float64(c, host_bytes, w_host, b_host, check_rows));
  }

  std::vector<float> w2((size_t) N * 2 * K);
  std::vector<__nv_bfloat16> w3((size_t) N * 3 * K);
  for (int n = 0; n < N; n++)
    for (int k = 0; k < K; k++) {
      const float v = w_host[(size_t) n * K + k] / 255.0f;
      const float hi = tf32_nearest(v);
      w2[(size_t) n * 2 * K + k] = hi;
      w2[(size_t) n * 2 * K + K + k] = v - hi;
      const __nv_bfloat16 b_hi = __float2bfloat16_rn(v);
      const float r1 = v - __bfloat162float(b_hi);
      const __nv_bfloat16 b_mid = __float2bfloat16_rn(r1);
      const float r2 = r1 - __bfloat162float(b_mid);
      w3[(size_t) n * 3 * K + k] = b_hi;
      w3[(size_t) n * 3 * K + K + k] = b_mid;
      w3[(size_t) n * 3 * K + 2 * K + k] = __float2bfloat16_rn(r2);
    }
  float *w2_dev, *x2;
  __nv_bfloat16 *w3_dev, *x3;
  CHECK(cudaMalloc(&w2_dev, sizeof(float) * w2.size()));
  CHECK(cudaMalloc(&w3_dev, sizeof(__nv_bfloat16) * w3.size()));
  CHECK(cudaMalloc(&x2, sizeof(float) * M * 2 * K));
  CHECK(cudaMalloc(&x3, sizeof(__nv_bfloat16) * M * 3 * K));
  CHECK(cudaMemcpy(w2_dev, w2.data(), sizeof(float) * w2.size(), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(w3_dev, w3.data(), sizeof(__nv_bfloat16) * w3.size(), cudaMemcpyHostToDevice));

  /* Centred: the bytes less 128, exact too, and 128/255·Σ_k W in the bias,
   * so the tensor cores' truncating sums stay small. */
  std::vector<float> b_centred(N);
  for (int n = 0; n < N; n++) {
    double sum = 0;
    for (int k = 0; k < K; k++)
      sum += w_host[(size_t) n * K + k];
    b_centred[n] = (float) (b_host[n] + 128.0 / 255.0 * sum);
  }
  float *bias_centred;
  CHECK(cudaMalloc(&bias_centred, sizeof(float) * N));
  CHECK(cudaMemcpy(bias_centred, b_centred.data(), sizeof(float) * N, cudaMemcpyHostToDevice));
  for (int centred = 0; centred < 2; centred++) {
    const float shift = centred ? 128.f : 0.f;
    const float *b = centred ? bias_centred : bias;
    const char *how = centred ? "centred" : "raw bytes";
    const float conv2 =
        time_us([&] { bytes_repeated<<<M, 256, 0, main_stream>>>(dev_bytes, x2, K, 2, shift); });
    const float conv3 =
        time_us([&] { bytes_repeated<<<M, 256, 0, main_stream>>>(dev_bytes, x3, K, 3, shift); });
    gemm g2 = plan_typed(lt, CUBLAS_COMPUTE_32F_FAST_TF32, CUDA_R_32F, 2 * K, M, b, WORKSPACE);
    const float us2 = best_gemm(lt, g2, (const float *) w2_dev, (const float *) x2, c, workspace);
    printf("FP32 as 2 × TF32, %s (K = %d, %zu candidates): GEMM %.1f µs, bytes repeated %.1f "
           "µs, error %.2e\n",
           how, 2 * K, g2.algos.size(), us2, conv2,
           error_vs_float64(c, host_bytes, w_host, b_host, check_rows));
    gemm g3 = plan_typed(lt, CUBLAS_COMPUTE_32F, CUDA_R_16BF, 3 * K, M, b, WORKSPACE);
    const float us3 =
        best_gemm(lt, g3, (const __nv_bfloat16 *) w3_dev, (const __nv_bfloat16 *) x3, c, workspace);
    printf("FP32 as 3 × BF16, %s (K = %d, %zu candidates): GEMM %.1f µs, bytes repeated %.1f "
           "µs, error %.2e\n",
           how, 3 * K, g3.algos.size(), us3, conv3,
           error_vs_float64(c, host_bytes, w_host, b_host, check_rows));
  }
  cudaFree(bias_centred);
  cudaFree(w2_dev);
  cudaFree(w3_dev);
  cudaFree(x2);
  cudaFree(x3);
}

int
main()
{
  CHECK(cudaStreamCreateWithFlags(&main_stream, cudaStreamNonBlocking));
  CHECK(cudaEventCreate(&t0));
  CHECK(cudaEventCreate(&t1));
  CHECK(cudaEventCreateWithFlags(&fork_ev, cudaEventDisableTiming));
  for (int j = 0; j < MAX_PIECES; j++) {
    CHECK(cudaStreamCreateWithFlags(&piece_stream[j], cudaStreamNonBlocking));
    CHECK(cudaEventCreateWithFlags(&piece_ev[j], cudaEventDisableTiming));
  }
  cublasLtHandle_t lt;
  BLAS(cublasLtCreate(&lt));

  /* The frame's bytes in pinned host memory and on the device; X, W, b, C. */
  unsigned char *host_bytes, *mapped_bytes, *dev_bytes;
  float *x, *w, *bias, *c;
  char *workspace;
  std::vector<float> init((size_t) N * K);
  CHECK(cudaHostAlloc(&host_bytes, (size_t) M * K, cudaHostAllocMapped));
  CHECK(cudaHostGetDevicePointer((void **) &mapped_bytes, host_bytes, 0));
  CHECK(cudaMalloc(&dev_bytes, (size_t) M * K));
  CHECK(cudaMalloc(&x, sizeof(float) * M * K));
  CHECK(cudaMalloc(&w, sizeof(float) * N * K));
  CHECK(cudaMalloc(&bias, sizeof(float) * N));
  CHECK(cudaMalloc(&c, sizeof(float) * M * N));
  CHECK(cudaMalloc(&workspace, WORKSPACE));
  for (size_t i = 0; i < (size_t) M * K; i++)
    host_bytes[i] = (unsigned char) (i * 2654435761u >> 24);
  for (size_t i = 0; i < init.size(); i++)
    init[i] = (float) (0.04 * sin(0.7071 * i + 0.3)); /* every mantissa bit in use */
  CHECK(cudaMemcpy(w, init.data(), sizeof(float) * N * K, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(bias, init.data(), sizeof(float) * N, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(dev_bytes, host_bytes, (size_t) M * K, cudaMemcpyHostToDevice));
  convert(dev_bytes, x, (size_t) M * K, main_stream);

  const float one = 1, zero = 0;
  for (int tf32 = 0; tf32 < 2; tf32++) {
    const char *precision = tf32 ? "TF32" : "FP32";
    /* The whole GEMM: every candidate, then split-K forced. */
    gemm whole = plan(lt, tf32, M, bias, WORKSPACE);
    float best = -1;
    for (size_t i = 0; i < whole.algos.size(); i++) {
      const cublasLtMatmulAlgo_t algo = whole.algos[i];
      const float us = time_us([&] {
        cublasLtMatmul(lt, whole.desc, &one, w, whole.w, x, whole.x, &zero, c, whole.c, c, whole.c,
                       &algo, workspace, WORKSPACE, main_stream);
      });
      printf("%s whole GEMM, candidate %2zu (split-K %d): %.1f µs\n", precision, i, split_k(algo),
             us);
      if (us > 0 && (best < 0 || us < best))
        best = us;
    }
    for (size_t i = 0; i < std::min<size_t>(8, whole.algos.size()); i++)
      for (int splits : { 2, 4 }) {
        cublasLtMatmulAlgo_t algo = whole.algos[i];
        cublasLtMatmulHeuristicResult_t check;
        cublasLtMatmulAlgoConfigSetAttribute(&algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &splits,
                                             sizeof splits);
        if (cublasLtMatmulAlgoCheck(lt, whole.desc, whole.w, whole.x, whole.c, whole.c, &algo,
                                    &check) != CUBLAS_STATUS_SUCCESS)
          continue;
        const float us = time_us([&] {
          cublasLtMatmul(lt, whole.desc, &one, w, whole.w, x, whole.x, &zero, c, whole.c, c,
                         whole.c, &algo, workspace, WORKSPACE, main_stream);
        });
        printf("%s whole GEMM, candidate %2zu, split-K forced to %d: %.1f µs\n", precision, i,
               splits, us);
      }
    printf("%s whole GEMM: best %.1f µs\n", precision, best);

    /* Row chunks: in series, concurrent, and chained to their upload. */
    for (int pieces : { 1, 2, 4 }) {
      const int rows = M / pieces;
      const size_t piece_bytes = (size_t) rows * K;
      const size_t ws = WORKSPACE / MAX_PIECES;
      gemm g = plan(lt, tf32, rows, bias, ws);
      float series = -1, concurrent = -1, chained = -1;
      for (const cublasLtMatmulAlgo_t &algo : g.algos) {
        auto piece = [&](int j, cudaStream_t stream) {
          cublasLtMatmul(lt, g.desc, &one, w, g.w, x + j * piece_bytes, g.x, &zero,
                         c + (size_t) j * rows * N, g.c, c + (size_t) j * rows * N, g.c, &algo,
                         workspace + j * ws, ws, stream);
        };
        const float s_us = time_us([&] {
          for (int j = 0; j < pieces; j++)
            piece(j, main_stream);
        });
        const float c_us = time_us([&] {
          cudaEventRecord(fork_ev, main_stream);
          for (int j = 0; j < pieces; j++) {
            cudaStreamWaitEvent(piece_stream[j], fork_ev, 0);
            piece(j, piece_stream[j]);
            cudaEventRecord(piece_ev[j], piece_stream[j]);
          }
          for (int j = 0; j < pieces; j++)
            cudaStreamWaitEvent(main_stream, piece_ev[j], 0);
        });
        const float h_us = time_us([&] {
          for (int j = 0; j < pieces; j++) {
            cudaMemcpyAsync(dev_bytes + j * piece_bytes, host_bytes + j * piece_bytes, piece_bytes,
                            cudaMemcpyHostToDevice, main_stream);
            cudaEventRecord(piece_ev[j], main_stream);
          }
          for (int j = 0; j < pieces; j++) {
            cudaStreamWaitEvent(piece_stream[j], piece_ev[j], 0);
            convert(dev_bytes + j * piece_bytes, x + j * piece_bytes, piece_bytes, piece_stream[j]);
            piece(j, piece_stream[j]);
            cudaEventRecord(piece_ev[j], piece_stream[j]);
          }
          for (int j = 0; j < pieces; j++)
            cudaStreamWaitEvent(main_stream, piece_ev[j], 0);
        });
        auto keep = [](float &best_us, float us) {
          if (us > 0 && (best_us < 0 || us < best_us))
            best_us = us;
        };
        keep(series, s_us);
        keep(concurrent, c_us);
        keep(chained, h_us);
      }
      printf("%s GEMM in %d × %d rows: in series %.1f µs, concurrent %.1f µs; "
             "upload + conversion + GEMM chained per chunk %.1f µs\n",
             precision, pieces, rows, series, concurrent, chained);
    }
  }

  const size_t bytes = (size_t) M * K;
  const float upload = time_us(
      [&] { cudaMemcpyAsync(dev_bytes, host_bytes, bytes, cudaMemcpyHostToDevice, main_stream); });
  const float on_device = time_us([&] { convert(dev_bytes, x, bytes, main_stream); });
  const float in_place = time_us([&] { convert(mapped_bytes, x, bytes, main_stream); });
  printf("1 MiB of bytes to floats: upload %.1f + conversion on the device %.1f µs; "
         "the conversion reading pinned host memory in place %.1f µs\n",
         upload, on_device, in_place);
  split_section(lt, host_bytes, dev_bytes, x, w, bias, c, workspace, init);
  return 0;
}
