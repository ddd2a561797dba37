// SPDX-License-Identifier: LGPL-2.1-or-later
/* The wide kernel alone on deep's, narrow's and hd's shapes (1080p RGB 8×8
 * patches; bf16, or floats as TF32 or exact FP32), random weights, and the
 * warp kernel where the shape's hidden layers are at most 64 wide
 * (narrow's): µs a launch, the median of 9 batches of 20 back to
 * back. For profiling (ncu) and for trying the kernels' tile sizes: its
 * question is how fast a kernel is away from the pipeline.
 * `wide-bench [SHAPE [wide|warp [bf16|tf32|fp32]]]`. */
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <cuda_bf16.h>

#include "cuda_kernels.h"

#define CHECK(call)                                                                                \
  do {                                                                                             \
    const cudaError_t e_ = (call);                                                                 \
    if (e_ != cudaSuccess) {                                                                       \
      fprintf(stderr, "%s: %s\n", #call, cudaGetErrorString(e_));                                  \
      return 1;                                                                                    \
    }                                                                                              \
  } while (0)

static int
run(const char *name, const std::vector<uint32_t> &outs, pp_act hidden, bool warp,
    const char *precision, cudaStream_t s)
{
  const pp_dtype type = strcmp(precision, "bf16") ? PP_DTYPE_F32 : PP_DTYPE_BF16;
  const bool tf32 = !strcmp(precision, "tf32");
  const uint32_t W = 1920, H = 1080, P = 8, K = P * P * 3, N = (W / P) * (H / P);
  const unsigned n = outs.size();
  std::vector<pp_cuda_wide_layer> layers(n), packed(n);
  std::vector<void *> owned;
  uint32_t in = K;
  srand(1);
  for (unsigned i = 0; i < n; i++) {
    const size_t count = (size_t) outs[i] * in;
    const bool last = i + 1 == n;
    std::vector<float> w(count), b(outs[i]);
    for (auto &v : w)
      v = ((float) rand() / RAND_MAX - 0.5f) / 8;
    for (auto &v : b)
      v = (float) rand() / RAND_MAX - 0.5f;
    void *dw = nullptr;
    float *db = nullptr;
    if (last || type == PP_DTYPE_F32) {
      CHECK(cudaMalloc(&dw, count * 4));
      CHECK(cudaMemcpy(dw, w.data(), count * 4, cudaMemcpyHostToDevice));
    } else {
      std::vector<__nv_bfloat16> w16(count);
      for (size_t j = 0; j < count; j++)
        w16[j] = __float2bfloat16(w[j]);
      CHECK(cudaMalloc(&dw, count * 2));
      CHECK(cudaMemcpy(dw, w16.data(), count * 2, cudaMemcpyHostToDevice));
    }
    CHECK(cudaMalloc(&db, outs[i] * 4));
    CHECK(cudaMemcpy(db, b.data(), outs[i] * 4, cudaMemcpyHostToDevice));
    owned.push_back(dw), owned.push_back(db);
    layers[i] = { dw, db, in, outs[i], last ? PP_ACT(PP_ACT_IDENTITY) : hidden };
    in = outs[i];
  }
  void *blob = nullptr;
  if (warp) {
    CHECK(cudaMalloc(&blob, pp_cuda_warp_packed_bytes(type, tf32, layers.data(), n)));
    CHECK(pp_cuda_warp_pack(s, type, tf32, layers.data(), n, blob, packed.data()));
  } else {
    CHECK(cudaMalloc(&blob, pp_cuda_wide_packed_bytes(type, tf32, layers.data(), n)));
    CHECK(pp_cuda_wide_pack(s, type, tf32, layers.data(), n, blob, packed.data()));
  }

  /* The frame's bytes and the reader's offsets, as frame_layout.h lays out
   * patches: input k of a patch is its pixel (k/3 % P, k/3 / P), channel k%3. */
  const size_t frame_bytes = (size_t) W * H * 3;
  std::vector<uint8_t> frame(frame_bytes);
  for (auto &v : frame)
    v = rand() & 255;
  std::vector<int32_t> koff(K);
  for (uint32_t k = 0; k < K; k++)
    koff[k] = (int32_t) ((k / 3 / P) * W * 3 + (k / 3 % P) * 3 + k % 3);
  void *d_frame = nullptr;
  int32_t *d_koff = nullptr;
  float *d_y = nullptr;
  CHECK(cudaMalloc(&d_frame, frame_bytes));
  CHECK(cudaMalloc(&d_koff, K * 4));
  CHECK(cudaMalloc(&d_y, N * 4));
  CHECK(cudaMemcpy(d_frame, frame.data(), frame_bytes, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(d_koff, koff.data(), K * 4, cudaMemcpyHostToDevice));
  pp_cuda_a a = {};
  a.kind = PP_A_U8_VEC4;
  a.data = d_frame;
  a.k_offset = d_koff;
  a.per_row = W / P;
  a.row_step = W * 3 * P;
  a.col_step = 3 * P;
  a.scale = 1.f / 255;

  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  std::vector<float> batches;
  for (int b = 0; b < 10; b++) {
    CHECK(cudaEventRecord(start, s));
    for (int i = 0; i < 20; i++)
      CHECK(warp ? pp_cuda_mlp_warp(s, &a, N, K, packed.data(), n, type, tf32, d_y)
                 : pp_cuda_mlp_wide(s, &a, N, K, packed.data(), n, type, tf32, d_y));
    CHECK(cudaEventRecord(stop, s));
    CHECK(cudaEventSynchronize(stop));
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, start, stop));
    if (b > 0)
      batches.push_back(ms * 1000 / 20);
  }
  std::sort(batches.begin(), batches.end());
  size_t smem = warp ? pp_cuda_mlp_warp_smem(type, K, n, outs.data())
                     : pp_cuda_mlp_wide_smem(type, K, n, outs.data());
  printf("%-8s %s %s %7.1f µs a launch (smem %zu bytes a block)\n", name, warp ? "warp" : "wide",
         precision, batches[batches.size() / 2], smem);
  for (void *p : owned)
    cudaFree(p);
  cudaFree(blob), cudaFree(d_frame), cudaFree(d_koff), cudaFree(d_y);
  cudaEventDestroy(start), cudaEventDestroy(stop);
  return 0;
}

int
main(int argc, char **argv)
{
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  const char *only = argc > 1 ? argv[1] : nullptr, *kernel = argc > 2 ? argv[2] : nullptr;
  const char *p = argc > 3 ? argv[3] : "bf16";
  if (strcmp(p, "bf16") && strcmp(p, "tf32") && strcmp(p, "fp32")) {
    fprintf(stderr, "wide-bench: precision %s: bf16, tf32 or fp32\n", p);
    return 2;
  }
  const bool wide = !kernel || !strcmp(kernel, "wide");
  const bool warp = !kernel || !strcmp(kernel, "warp");
  int rc = 0;
  if ((!only || !strcmp(only, "deep")) && wide)
    rc |= run("deep", { 512, 256, 64, 1 }, PP_ACT(PP_ACT_GELU), false, p, s);
  if ((!only || !strcmp(only, "deep-relu")) && wide)
    rc |= run("deep-relu", { 512, 256, 64, 1 }, PP_ACT(PP_ACT_RELU), false, p, s);
  for (int w = 0; w < 2; w++)
    if ((!only || !strcmp(only, "narrow")) && (w ? warp : wide))
      rc |= run("narrow", { 64, 64, 64, 64, 1 }, PP_ACT(PP_ACT_RELU), w, p, s);
  if ((!only || !strcmp(only, "hd")) && wide)
    rc |= run("hd", { 256, 1 }, PP_ACT(PP_ACT_RELU), false, p, s);
  return rc;
}
