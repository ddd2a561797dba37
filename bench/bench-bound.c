// SPDX-License-Identifier: LGPL-2.1-or-later
/* pingpong-bench's physical bound (bench.h): the device's copy bandwidth
 * measured on pinned memory, its arithmetic peak from its properties, and
 * for a workload the period no pipeline can beat, the slowest of its bytes
 * in, bytes out and arithmetic at those rates. */
#include <cuda_runtime_api.h>
#include <stdio.h>

#include "bench.h"
#include "timing.h"

enum { COPY_BYTES = 64 << 20, COPY_REPEATS = 9 };

/* Median µs of one `kind` copy of COPY_BYTES on `stream`. */
static double
time_copy(void *dst, const void *src, enum cudaMemcpyKind kind, cudaStream_t stream,
          cudaEvent_t start, cudaEvent_t stop)
{
  double samples[COPY_REPEATS];
  for (int i = -1; i < COPY_REPEATS; i++) {
    float ms = 0;
    if (cudaEventRecord(start, stream) != cudaSuccess ||
        cudaMemcpyAsync(dst, src, COPY_BYTES, kind, stream) != cudaSuccess ||
        cudaEventRecord(stop, stream) != cudaSuccess || cudaEventSynchronize(stop) != cudaSuccess ||
        cudaEventElapsedTime(&ms, start, stop) != cudaSuccess)
      return -1;
    if (i >= 0)
      samples[i] = ms * 1e3;
  }
  return pp_median(samples, COPY_REPEATS);
}

gboolean
bench_copy_bandwidth(int device, double *h2d_bytes_per_us, double *d2h_bytes_per_us)
{
  void *host = NULL, *dev = NULL;
  cudaStream_t stream = NULL;
  cudaEvent_t start = NULL, stop = NULL;
  gboolean ok = cudaSetDevice(device) == cudaSuccess &&
                cudaHostAlloc(&host, COPY_BYTES, cudaHostAllocDefault) == cudaSuccess &&
                cudaMalloc(&dev, COPY_BYTES) == cudaSuccess &&
                cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) == cudaSuccess &&
                cudaEventCreate(&start) == cudaSuccess && cudaEventCreate(&stop) == cudaSuccess;
  double h2d = -1, d2h = -1;
  if (ok) {
    h2d = time_copy(dev, host, cudaMemcpyHostToDevice, stream, start, stop);
    d2h = time_copy(host, dev, cudaMemcpyDeviceToHost, stream, start, stop);
  }
  if (start)
    cudaEventDestroy(start);
  if (stop)
    cudaEventDestroy(stop);
  if (stream)
    cudaStreamDestroy(stream);
  cudaFree(dev);
  cudaFreeHost(host);
  if (!(h2d > 0 && d2h > 0)) {
    fprintf(stderr, "pingpong-bench: cannot time pinned copies on device %d\n", device);
    return FALSE;
  }
  *h2d_bytes_per_us = COPY_BYTES / h2d;
  *d2h_bytes_per_us = COPY_BYTES / d2h;
  return TRUE;
}

/* Dense multiply-add rate per SM per clock, in FLOPs, of the tensor cores
 * (16-bit inputs) by compute capability: Ampere's A100 2048, Ada 1024,
 * Hopper 4096 (NVIDIA's architecture papers). TF32 runs at half that; exact
 * FP32 on tensor cores (three TF32 pieces) at a sixth, unless the CUDA
 * cores' 256 (128 FMA units) are more. */
static double
tensor_flops_per_sm_clock(int major, int minor)
{
  if (major >= 9)
    return 4096;
  if (major == 8 && minor == 0)
    return 2048;
  if (major == 8)
    return 1024;
  return 0; /* no dense tensor cores counted before Ampere */
}

double
bench_peak_flops_per_us(int device, const char *precision)
{
  struct cudaDeviceProp prop;
  int clock_khz = 0;
  if (cudaGetDeviceProperties(&prop, device) != cudaSuccess ||
      cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, device) != cudaSuccess)
    return -1;
  const double tensor = tensor_flops_per_sm_clock(prop.major, prop.minor);
  double per_clock = 256; /* FP32 on the CUDA cores */
  if (g_str_equal(precision, "bf16") || g_str_equal(precision, "fp16"))
    per_clock = MAX(per_clock, tensor);
  else if (g_str_equal(precision, "tf32"))
    per_clock = MAX(per_clock, tensor / 2);
  else
    per_clock = MAX(per_clock, tensor / 6);
  return per_clock * prop.multiProcessorCount * clock_khz * 1e-3;
}

void
bench_bound(const pp_frame_layout *layout, const pp_model *model, double h2d_bytes_per_us,
            double d2h_bytes_per_us, double flops_per_us, bench_bound_times *b)
{
  double in = 0;
  for (uint32_t p = 0; p < layout->n_planes; p++)
    in += (double) layout->planes[p].row_bytes * layout->planes[p].rows;
  if (in == 0)
    in = (double) layout->frame_bytes;
  double flops = 0;
  for (uint32_t l = 0; l < model->n_layers; l++)
    flops += 2.0 * layout->n * model->layers[l].in * model->layers[l].out;
  b->h2d_us = in / h2d_bytes_per_us;
  b->d2h_us = (double) layout->n * model->o * sizeof(float) / d2h_bytes_per_us;
  b->mlp_us = flops / flops_per_us;
  b->period_us = MAX(b->h2d_us, MAX(b->mlp_us, b->d2h_us));
  b->by = b->period_us == b->h2d_us ? "H2D" : b->period_us == b->mlp_us ? "MLP" : "D2H";
}
