// SPDX-License-Identifier: LGPL-2.1-or-later
/* How long a frame's upload takes by its size, from which host memory, and
 * whether uploads on several streams overlap: the question behind seed's
 * 1 MiB copy taking 28.9 µs where the copy bandwidth of 64 MiB copies
 * allows 19. Per kind of pinned memory (cudaHostAlloc; anonymous memory
 * pinned with cudaHostRegister, as cudamlp's pools are; the same with
 * transparent huge pages asked for): one copy alone by size (median of 31,
 * CUDA events), then 1 MiB copies back to back on 1, 2 and 4 streams (µs a
 * copy over 64), then a kernel reading the frame over the bus itself
 * (zero-copy, 1 MiB). */
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <sys/mman.h>
#include <vector>

#include <cuda_runtime.h>

#include "cuda_check.cuh"

constexpr size_t MAX_BYTES = 64u << 20, FRAME = 1u << 20;
constexpr int STREAMS = 4, BATCH = 64, REPS = 31;

static cudaStream_t streams[STREAMS];
static cudaEvent_t start, stop, joined[STREAMS];

static double
median(std::vector<double> v)
{
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

/* µs since `start`, once what stream 0 holds now is done. */
static double
elapsed_us(void)
{
  CHECK(cudaEventRecord(stop, streams[0]));
  CHECK(cudaEventSynchronize(stop));
  float ms = 0;
  CHECK(cudaEventElapsedTime(&ms, start, stop));
  return ms * 1e3;
}

/* µs of `copies` uploads of `bytes` each spread over `n` streams, from
 * start on stream 0 to every stream done; copy c from src[c % 8]. */
static double
time_from(void *dev, char *const *src, size_t bytes, int copies, int n)
{
  std::vector<double> runs;
  for (int r = -1; r < 7; r++) {
    CHECK(cudaEventRecord(start, streams[0]));
    for (int s = 1; s < n; s++)
      CHECK(cudaStreamWaitEvent(streams[s], start, 0));
    for (int c = 0; c < copies; c++)
      CHECK(cudaMemcpyAsync(static_cast<char *>(dev) + (size_t) (c % 8) * bytes, src[c % 8], bytes,
                            cudaMemcpyHostToDevice, streams[c % n]));
    for (int s = 1; s < n; s++) {
      CHECK(cudaEventRecord(joined[s], streams[s]));
      CHECK(cudaStreamWaitEvent(streams[0], joined[s], 0));
    }
    const double us = elapsed_us();
    if (r >= 0)
      runs.push_back(us);
  }
  return median(runs);
}

/* The same from one region, copy c at c % 8 frames in. */
static double
time_copies(void *dev, char *host, size_t bytes, int copies, int n)
{
  char *src[8];
  for (int i = 0; i < 8; i++)
    src[i] = host + (size_t) i * bytes;
  return time_from(dev, src, bytes, copies, n);
}

/* 1 MiB frames each in a mapping of its own, pinned alone, as cudamlp's
 * pool allocates them; `huge`: a 2 MiB-aligned mapping of 2 MiB with
 * transparent huge pages asked for. */
static void
separate_frames(void *dev, bool huge)
{
  char *src[8];
  const size_t map = huge ? 4u << 20 : FRAME;
  for (int i = 0; i < 8; i++) {
    char *m = static_cast<char *>(
        mmap(nullptr, map, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    if (m == MAP_FAILED)
      exit(1);
    if (huge) {
      m = reinterpret_cast<char *>((reinterpret_cast<uintptr_t>(m) + (2u << 20) - 1) &
                                   ~(uintptr_t) ((2u << 20) - 1));
      madvise(m, 2u << 20, MADV_HUGEPAGE);
    }
    for (size_t j = 0; j < FRAME; j += 4096)
      m[j] = (char) j;
    CHECK(cudaHostRegister(m, FRAME, cudaHostRegisterPortable | cudaHostRegisterMapped));
    src[i] = m;
  }
  std::vector<double> t;
  for (int i = 0; i < REPS; i++)
    t.push_back(time_from(dev, src, FRAME, 1, 1));
  printf("1 MiB frames in mappings of their own%s: one alone %.1f µs; back to back: 1 stream "
         "%.1f, 4 streams %.1f µs each\n",
         huge ? " (2 MiB-aligned, huge pages asked for)" : " (4 KiB pages, as cudamlp's pool)",
         median(t), time_from(dev, src, FRAME, BATCH, 1) / BATCH,
         time_from(dev, src, FRAME, BATCH, 4) / BATCH);
  for (int i = 0; i < 8; i++)
    CHECK(cudaHostUnregister(src[i]));
}

__global__ void
read_over_bus(const uint4 *__restrict__ host, uint4 *__restrict__ dev, size_t n)
{
  for (size_t i = blockIdx.x * (size_t) blockDim.x + threadIdx.x; i < n;
       i += (size_t) gridDim.x * blockDim.x)
    dev[i] = host[i];
}

static void
measure(const char *kind, char *host, void *dev, int sms)
{
  printf("%s\n  one upload alone:", kind);
  for (size_t bytes = 64u << 10; bytes <= MAX_BYTES; bytes *= 4) {
    const size_t b = bytes; /* one copy: from the buffer's start */
    std::vector<double> t;
    for (int i = 0; i < REPS; i++)
      t.push_back(time_copies(dev, host, b, 1, 1));
    printf(" %zu KiB %.1f µs (%.1f GB/s);", b >> 10, median(t), b / median(t) / 1e3);
  }
  printf("\n  1 MiB uploads back to back, µs each:");
  for (int n = 1; n <= STREAMS; n *= 2)
    printf(" %d stream%s %.1f;", n, n > 1 ? "s" : "",
           time_copies(dev, host, FRAME, BATCH, n) / BATCH);
  void *mapped = nullptr;
  CHECK(cudaHostGetDevicePointer(&mapped, host, 0));
  std::vector<double> t;
  for (int blocks = sms; blocks <= 8 * sms; blocks *= 2) {
    for (int r = -1; r < 9; r++) {
      CHECK(cudaEventRecord(start, streams[0]));
      read_over_bus<<<blocks, 256, 0, streams[0]>>>(static_cast<const uint4 *>(mapped),
                                                    static_cast<uint4 *>(dev), FRAME / 16);
      const double us = elapsed_us();
      if (r >= 0)
        t.push_back(us);
    }
    printf("\n  1 MiB read over the bus by a kernel of %d blocks: %.1f µs", blocks, median(t));
    t.clear();
  }
  printf("\n");
}

int
main()
{
  int sms = 0;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  for (int s = 0; s < STREAMS; s++) {
    CHECK(cudaStreamCreateWithFlags(&streams[s], cudaStreamNonBlocking));
    CHECK(cudaEventCreate(&joined[s]));
  }
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  void *dev = nullptr;
  CHECK(cudaMalloc(&dev, MAX_BYTES));

  if (FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r")) {
    char line[128] = "";
    if (fgets(line, sizeof line, f))
      printf("transparent huge pages: %s", line);
    fclose(f);
  }
  separate_frames(dev, false);
  separate_frames(dev, true);

  char *alloc = nullptr;
  CHECK(cudaHostAlloc(&alloc, MAX_BYTES, cudaHostAllocMapped | cudaHostAllocPortable));
  measure("cudaHostAlloc", alloc, dev, sms);
  CHECK(cudaFreeHost(alloc));

  for (int huge = 0; huge < 2; huge++) {
    char *anon = static_cast<char *>(
        mmap(nullptr, MAX_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    if (anon == MAP_FAILED)
      return 1;
    if (huge)
      madvise(anon, MAX_BYTES, MADV_HUGEPAGE);
    for (size_t i = 0; i < MAX_BYTES; i += 4096)
      anon[i] = (char) i;
    CHECK(cudaHostRegister(anon, MAX_BYTES, cudaHostRegisterPortable | cudaHostRegisterMapped));
    measure(huge ? "mmap + MADV_HUGEPAGE + cudaHostRegister"
                 : "mmap + cudaHostRegister (cudamlp's pools)",
            anon, dev, sms);
    CHECK(cudaHostUnregister(anon));
    munmap(anon, MAX_BYTES);
  }
  return 0;
}
