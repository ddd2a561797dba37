// SPDX-License-Identifier: LGPL-2.1-or-later
/* pingpong-bench's physical bound (bench.h): the device's copy bandwidth
 * measured on pinned memory, each direction alone and both at once, its
 * arithmetic peak from its properties, and for a workload the period no
 * pipeline can beat, the slowest of its bytes in, bytes out, both
 * together, and arithmetic at those rates. */
#include <cuda_runtime_api.h>
#include <stdio.h>

#include "bench.h"
#include "timing.h"

enum { COPY_BYTES = 64 << 20, COPY_REPEATS = 9 };

/* Median µs of one upload (`up`) and/or one download (`down`) of
 * COPY_BYTES, started together: the download's stream waits for the
 * start, the upload's for the download's end. */
static double
time_copies(void *dev_in, const void *host_in, void *host_out, const void *dev_out, cudaStream_t up,
            cudaStream_t down, cudaEvent_t start, cudaEvent_t joined, cudaEvent_t stop)
{
  double samples[COPY_REPEATS];
  for (int i = -1; i < COPY_REPEATS; i++) {
    float ms = 0;
    gboolean ok = cudaEventRecord(start, up) == cudaSuccess &&
                  cudaStreamWaitEvent(down, start, 0) == cudaSuccess;
    if (ok && host_in)
      ok = cudaMemcpyAsync(dev_in, host_in, COPY_BYTES, cudaMemcpyHostToDevice, up) == cudaSuccess;
    if (ok && host_out)
      ok = cudaMemcpyAsync(host_out, dev_out, COPY_BYTES, cudaMemcpyDeviceToHost, down) ==
           cudaSuccess;
    if (!ok || cudaEventRecord(joined, down) != cudaSuccess ||
        cudaStreamWaitEvent(up, joined, 0) != cudaSuccess ||
        cudaEventRecord(stop, up) != cudaSuccess || cudaEventSynchronize(stop) != cudaSuccess ||
        cudaEventElapsedTime(&ms, start, stop) != cudaSuccess)
      return -1;
    if (i >= 0)
      samples[i] = ms * 1e3;
  }
  return pp_median(samples, COPY_REPEATS);
}

gboolean
bench_copy_bandwidth(int device, bench_copy_rates *rates)
{
  void *host[2] = { NULL, NULL }, *dev[2] = { NULL, NULL };
  cudaStream_t up = NULL, down = NULL;
  cudaEvent_t start = NULL, joined = NULL, stop = NULL;
  gboolean ok = cudaSetDevice(device) == cudaSuccess &&
                cudaStreamCreateWithFlags(&up, cudaStreamNonBlocking) == cudaSuccess &&
                cudaStreamCreateWithFlags(&down, cudaStreamNonBlocking) == cudaSuccess &&
                cudaEventCreate(&start) == cudaSuccess && cudaEventCreate(&joined) == cudaSuccess &&
                cudaEventCreate(&stop) == cudaSuccess;
  for (int i = 0; i < 2 && ok; i++)
    ok = cudaHostAlloc(&host[i], COPY_BYTES, cudaHostAllocDefault) == cudaSuccess &&
         cudaMalloc(&dev[i], COPY_BYTES) == cudaSuccess;
  double h2d = -1, d2h = -1, both = -1;
  if (ok) {
    h2d = time_copies(dev[0], host[0], NULL, NULL, up, down, start, joined, stop);
    d2h = time_copies(NULL, NULL, host[1], dev[1], up, down, start, joined, stop);
    both = time_copies(dev[0], host[0], host[1], dev[1], up, down, start, joined, stop);
  }
  cudaEvent_t events[] = { start, joined, stop };
  for (size_t i = 0; i < G_N_ELEMENTS(events); i++)
    if (events[i])
      cudaEventDestroy(events[i]);
  if (up)
    cudaStreamDestroy(up);
  if (down)
    cudaStreamDestroy(down);
  for (int i = 0; i < 2; i++) {
    cudaFree(dev[i]);
    cudaFreeHost(host[i]);
  }
  if (!(h2d > 0 && d2h > 0 && both > 0)) {
    fprintf(stderr, "pingpong-bench: cannot time pinned copies on device %d\n", device);
    return FALSE;
  }
  rates->h2d = COPY_BYTES / h2d;
  rates->d2h = COPY_BYTES / d2h;
  rates->both = 2.0 * COPY_BYTES / both;
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
bench_bound(const pp_frame_layout *layout, const pp_model *model, const bench_copy_rates *copy,
            double flops_per_us, bench_bound_times *b)
{
  double in = 0;
  for (uint32_t p = 0; p < layout->n_planes; p++)
    in += (double) layout->planes[p].row_bytes * layout->planes[p].rows;
  if (in == 0)
    in = (double) layout->frame_bytes;
  double flops = 0;
  for (uint32_t l = 0; l < model->n_layers; l++)
    flops += 2.0 * layout->n * model->layers[l].in * model->layers[l].out;
  const double out = (double) layout->n * model->o * sizeof(float);
  b->h2d_us = in / copy->h2d;
  b->d2h_us = out / copy->d2h;
  b->copies_us = (in + out) / copy->both;
  b->mlp_us = flops / flops_per_us;
  b->period_us = MAX(MAX(b->h2d_us, b->d2h_us), MAX(b->mlp_us, b->copies_us));
  b->by = b->period_us == b->h2d_us   ? "H2D"
          : b->period_us == b->d2h_us ? "D2H"
          : b->period_us == b->mlp_us ? "MLP"
                                      : "copies";
}
