// SPDX-License-Identifier: LGPL-2.1-or-later
/* Whether a frame's upload and the previous frame's download overlap at
 * full speed, one copy engine a direction: per workload's bytes in and
 * out, 64 uploads back to back alone, 64 downloads alone, then both at
 * once on two streams (µs a frame, the median of 7 runs). The last is the
 * copies' own frames/s ceiling at each workload's frame size; the bench's
 * bound measures the same on 64 MiB copies (bench-bound.c). Host memory is
 * anonymous memory registered frame by frame, as cudamlp's pools are. */
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <sys/mman.h>
#include <vector>

#include <cuda_runtime.h>

#include "cuda_check.cuh"

constexpr int RING = 8, COPIES = 64, RUNS = 7;

struct side {
  char *host[RING];
  char *dev;
  size_t bytes;
};

static char *
pinned(size_t bytes)
{
  void *m = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) {
    perror("copy-duplex: mmap");
    exit(1);
  }
  for (size_t j = 0; j < bytes; j += 4096)
    static_cast<char *>(m)[j] = (char) j;
  CHECK(cudaHostRegister(m, bytes, cudaHostRegisterPortable));
  return static_cast<char *>(m);
}

static side
make_side(size_t bytes)
{
  side s;
  s.bytes = bytes;
  for (int i = 0; i < RING; i++)
    s.host[i] = pinned(bytes);
  CHECK(cudaMalloc(&s.dev, bytes * RING));
  return s;
}

static void
free_side(side &s)
{
  for (int i = 0; i < RING; i++) {
    CHECK(cudaHostUnregister(s.host[i]));
    munmap(s.host[i], s.bytes);
  }
  CHECK(cudaFree(s.dev));
}

/* µs a frame of COPIES uploads on `up` and/or downloads on `down`, both
 * started by one event; the median of RUNS. */
static double
per_frame(const side *in, const side *out, cudaStream_t up, cudaStream_t down)
{
  cudaEvent_t start, up_done, down_done;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&up_done));
  CHECK(cudaEventCreate(&down_done));
  std::vector<double> runs;
  for (int r = -1; r < RUNS; r++) {
    CHECK(cudaEventRecord(start, up));
    CHECK(cudaStreamWaitEvent(down, start, 0));
    for (int c = 0; c < COPIES; c++) {
      if (in)
        CHECK(cudaMemcpyAsync(in->dev + (c % RING) * in->bytes, in->host[c % RING], in->bytes,
                              cudaMemcpyHostToDevice, up));
      if (out)
        CHECK(cudaMemcpyAsync(out->host[c % RING], out->dev + (c % RING) * out->bytes, out->bytes,
                              cudaMemcpyDeviceToHost, down));
    }
    CHECK(cudaEventRecord(down_done, down));
    CHECK(cudaStreamWaitEvent(up, down_done, 0));
    CHECK(cudaEventRecord(up_done, up));
    CHECK(cudaEventSynchronize(up_done));
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, start, up_done));
    if (r >= 0)
      runs.push_back(ms * 1e3 / COPIES);
  }
  CHECK(cudaEventDestroy(start));
  CHECK(cudaEventDestroy(up_done));
  CHECK(cudaEventDestroy(down_done));
  std::sort(runs.begin(), runs.end());
  return runs[runs.size() / 2];
}

int
main()
{
  struct {
    const char *name;
    size_t in, out;
  } const workloads[] = {
    { "balanced", 4u << 20, 4u << 20 },         /* 256 × 4096 float32 in and out */
    { "deep", 1920 * 1080 * 3, 240 * 135 * 4 }, /* 1080p RGB in, a float a patch out */
    { "hd-nv12", 1920 * 1080 * 3 / 2, 240 * 135 * 4 },
    { "seed", 1u << 20, 1024 * 4 },
  };
  cudaStream_t up, down;
  CHECK(cudaStreamCreateWithFlags(&up, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&down, cudaStreamNonBlocking));
  printf(
      "| workload | bytes in | bytes out | upload alone µs | download alone µs | both at once µs "
      "a frame | frames/s ceiling |\n|---|---|---|---|---|---|---|\n");
  for (const auto &w : workloads) {
    side in = make_side(w.in), out = make_side(w.out);
    const double up_us = per_frame(&in, nullptr, up, down);
    const double down_us = per_frame(nullptr, &out, up, down);
    const double both_us = per_frame(&in, &out, up, down);
    printf("| %s | %zu | %zu | %.1f | %.1f | %.1f | %.0f |\n", w.name, w.in, w.out, up_us, down_us,
           both_us, 1e6 / both_us);
    free_side(in);
    free_side(out);
  }
  CHECK(cudaStreamDestroy(up));
  CHECK(cudaStreamDestroy(down));
  return 0;
}
