/* arm-probe: how soon a kernel queued ahead of its frame runs once the
 * host rings, and what delays it (src/cuda/armed.c). Each row times, on
 * the host's clock, from an event to the moment a kernel's write into
 * mapped host memory is seen, 200 times after 1 ms idle (p50 / p90 µs):
 *
 *   launch      a kernel that only writes a flag: launch call to the flag
 *   launch+q    the same, with cudaStreamQuery right after the launch
 *   wait        cuStreamWaitValue32 on a host word, then that kernel,
 *               the word written 100 µs later: the write to the flag
 *   wait+q      the same, with cudaStreamQuery after queueing
 *   poll        a kernel polling the host word (ld.global.cv), launched
 *               100 µs before the write: the write to the flag
 *   poll+q      the same, with cudaStreamQuery after the launch
 *
 * and how often the kernel ran before the word was written ("early").
 * Then the cancel protocol of armed.c on mmap'd, registered memory (the
 * backend's kind): a stream wait, a kernel that reads `cancel` once
 * started, the host writing cancel then the word at once or 100 µs later;
 * how often the kernel missed the cancel. Last, the real kernel
 * (tiny's shape, frames as floats), its bell in cudaHostAlloc'd then in
 * registered memory: pp_cuda_mlp_small launched (launch to its done event
 * seen), the same behind a stream wait, and pp_cuda_mlp_small_armed
 * behind a stream wait and a copy of the bell to the device, as armed.c
 * queues it (both rung 100 µs after queueing: ring to done event); and
 * the armed kernel cancelled at once, which must write no result.
 *
 *   arm-probe [--frames N]
 */
#include <cuda.h>
#include <cuda_runtime_api.h>

#include "cuda_kernels.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CHECK(call)                                                                                \
  do {                                                                                             \
    cudaError_t err_ = (call);                                                                     \
    if (err_ != cudaSuccess) {                                                                     \
      fprintf(stderr, "%s: %s\n", #call, cudaGetErrorString(err_));                                \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)

typedef struct {
  volatile uint32_t word; /* the host's */
  volatile uint32_t flag; /* the kernel's */
  volatile uint32_t early;
  volatile uint32_t cancel; /* the host's, before word */
  volatile uint32_t missed; /* the kernel's: cancel not seen */
} probe;

static int64_t
now_ns(void)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t) t.tv_sec * 1000000000 + t.tv_nsec;
}

static void
spin_until(int64_t t)
{
  while (now_ns() < t)
    ;
}

__device__ __forceinline__ uint32_t
load_fresh(const volatile uint32_t *p)
{
  uint32_t v;
  asm volatile("ld.global.cv.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

/* Writes `gen` to the flag, noting whether the word had it yet. */
__global__ void
mark(probe *p, uint32_t gen, int poll)
{
  if (poll)
    while (load_fresh(&p->word) != gen)
      __nanosleep(100);
  if (load_fresh(&p->word) != gen)
    p->early = p->early + 1;
  __threadfence_system();
  p->flag = gen;
  __threadfence_system();
}

/* Started after the stream's wait: `cancel` must say gen by now. */
__global__ void
read_cancel(probe *p, uint32_t gen)
{
  asm volatile("fence.acq_rel.sys;" ::: "memory");
  if (load_fresh(&p->cancel) != gen)
    p->missed = p->missed + 1;
  __threadfence_system();
}

typedef CUresult (*wait_value_fn)(CUstream, CUdeviceptr, cuuint32_t, unsigned);

static int
cmp(const void *a, const void *b)
{
  const double x = *(const double *) a, y = *(const double *) b;
  return (x > y) - (x < y);
}

int
main(int argc, char **argv)
{
  int frames = 200;
  if (argc == 3 && strcmp(argv[1], "--frames") == 0)
    frames = atoi(argv[2]);
  void *entry = NULL;
  cudaDriverEntryPointQueryResult found;
  CHECK(cudaGetDriverEntryPointByVersion("cuStreamWaitValue32", &entry, 12000, cudaEnableDefault,
                                         &found));
  wait_value_fn wait_value = found == cudaDriverEntryPointSuccess ? (wait_value_fn) entry : NULL;
  probe *p = NULL, *dp = NULL;
  CHECK(cudaHostAlloc((void **) &p, sizeof *p, cudaHostAllocMapped));
  CHECK(cudaHostGetDevicePointer((void **) &dp, p, 0));
  memset((void *) p, 0, sizeof *p);
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  mark<<<1, 1, 0, s>>>(dp, 0, 0);
  CHECK(cudaStreamSynchronize(s));

  static const char *names[] = { "launch", "launch+q", "wait", "wait+q", "poll", "poll+q" };
  double *us = (double *) malloc(sizeof(double) * frames);
  uint32_t gen = 0;
  printf("| case | p50 µs | p90 µs | early |\n|---|---|---|---|\n");
  for (int c = 0; c < 6; c++) {
    if ((c == 2 || c == 3) && !wait_value) {
      printf("| %s | no cuStreamWaitValue32 | | |\n", names[c]);
      continue;
    }
    p->early = 0;
    for (int i = 0; i < frames; i++) {
      struct timespec idle = { 0, 1000000 };
      nanosleep(&idle, NULL);
      gen++;
      int64_t from;
      if (c < 2) {
        p->word = gen;
        from = now_ns();
        mark<<<1, 1, 0, s>>>(dp, gen, 0);
        if (c == 1)
          cudaStreamQuery(s);
      } else {
        if (c < 4) {
          if (wait_value(s, (CUdeviceptr) (uintptr_t) &dp->word, gen, CU_STREAM_WAIT_VALUE_EQ) !=
              CUDA_SUCCESS) {
            fprintf(stderr, "cuStreamWaitValue32 failed\n");
            return 1;
          }
          mark<<<1, 1, 0, s>>>(dp, gen, 0);
        } else {
          mark<<<1, 1, 0, s>>>(dp, gen, 1);
        }
        if (c % 2)
          cudaStreamQuery(s);
        spin_until(now_ns() + 100000);
        from = now_ns();
        __atomic_store_n(&p->word, gen, __ATOMIC_RELEASE);
      }
      while (p->flag != gen)
        ;
      us[i] = (now_ns() - from) / 1000.0;
      CHECK(cudaStreamSynchronize(s));
    }
    qsort(us, frames, sizeof *us, cmp);
    printf("| %s | %.2f | %.2f | %u |\n", names[c], us[frames / 2], us[frames * 9 / 10], p->early);
  }
  free(us);

  /* The cancel protocol on registered memory. */
  const size_t page = 4096;
  probe *r = (probe *) aligned_alloc(page, page), *dr = NULL;
  memset((void *) r, 0, page);
  CHECK(cudaHostRegister(r, page, cudaHostRegisterPortable | cudaHostRegisterMapped));
  CHECK(cudaHostGetDevicePointer((void **) &dr, r, 0));
  for (int later = 0; later < 2 && wait_value; later++) {
    r->missed = 0;
    for (int i = 0; i < frames; i++) {
      gen++;
      if (wait_value(s, (CUdeviceptr) (uintptr_t) &dr->word, gen, CU_STREAM_WAIT_VALUE_EQ) !=
          CUDA_SUCCESS)
        return 1;
      read_cancel<<<1, 1, 0, s>>>(dr, gen);
      if (later)
        spin_until(now_ns() + 100000);
      __atomic_store_n(&r->cancel, gen, __ATOMIC_RELEASE);
      __atomic_store_n(&r->word, gen, __ATOMIC_RELEASE);
      CHECK(cudaStreamSynchronize(s));
    }
    printf("| cancel %s, registered memory | | | missed %u of %d |\n",
           later ? "100 µs later" : "at once", r->missed, frames);
  }
  cudaHostUnregister(r);
  free(r);

  /* The real kernel: tiny's MLP (256 rows of 256 floats, 64 hidden, 1 out). */
  const uint32_t m = 256, k = 256, d = 64;
  float *frame = NULL, *result = NULL, *w = NULL;
  CHECK(cudaHostAlloc((void **) &frame, m * k * 4, cudaHostAllocMapped));
  CHECK(cudaHostAlloc((void **) &result, m * 4, cudaHostAllocMapped));
  for (uint32_t i = 0; i < m * k; i++)
    frame[i] = (float) (i % 7) / 7.0f;
  CHECK(cudaMalloc((void **) &w, (k * d + 2 * d + 1) * 4));
  CHECK(cudaMemset(w, 0, (k * d + 2 * d + 1) * 4));
  pp_cuda_a x;
  memset(&x, 0, sizeof x);
  x.kind = PP_A_F32;
  x.data = frame;
  x.ld = k;
  const pp_act relu = { PP_ACT_RELU, 0.f }, none = { PP_ACT_IDENTITY, 0.f };
  cudaEvent_t done;
  CHECK(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
  /* The bell in memory from cudaHostAlloc, then in registered memory. */
  pp_cuda_bell *bells[2] = { NULL, (pp_cuda_bell *) aligned_alloc(page, page) };
  CHECK(cudaHostAlloc((void **) &bells[0], sizeof(pp_cuda_bell), cudaHostAllocMapped));
  CHECK(cudaHostRegister(bells[1], page, cudaHostRegisterPortable | cudaHostRegisterMapped));
  pp_cuda_bell *bell_copy = NULL; /* what the armed kernel reads (armed.c) */
  CHECK(cudaMalloc((void **) &bell_copy, sizeof *bell_copy));
  us = (double *) malloc(sizeof(double) * frames);
  for (int mem = 0; mem < 2 && wait_value; mem++) {
    pp_cuda_bell *bell = bells[mem], *d_bell = NULL;
    memset(bell, 0, sizeof *bell);
    CHECK(cudaHostGetDevicePointer((void **) &d_bell, bell, 0));
    const char *where = mem ? "registered" : "cudaHostAlloc";
    for (int c = 0; c < 3; c++) {
      for (int i = 0; i < frames; i++) {
        struct timespec idle = { 0, 1000000 };
        nanosleep(&idle, NULL);
        gen++;
        int64_t from = now_ns();
        if (c > 0 && wait_value(s, (CUdeviceptr) (uintptr_t) &d_bell->go, gen,
                                CU_STREAM_WAIT_VALUE_EQ) != CUDA_SUCCESS)
          return 1;
        const pp_cuda_armed armed = { bell_copy, gen };
        if (c == 2)
          CHECK(cudaMemcpyAsync(bell_copy, bell, sizeof *bell, cudaMemcpyHostToDevice, s));
        if (c < 2)
          CHECK(pp_cuda_mlp_small(s, &x, m, k, w, d, w + k * d, d, relu, w + k * d + d, NULL, 1,
                                  none, result, 2));
        else
          CHECK(pp_cuda_mlp_small_armed(s, &x, m, k, w, d, w + k * d, d, relu, w + k * d + d, NULL,
                                        1, none, 2, &armed));
        CHECK(cudaEventRecord(done, s));
        if (c > 0) {
          spin_until(now_ns() + 100000);
          from = now_ns();
          bell->input = frame;
          bell->output = result;
          __atomic_store_n(&bell->go, gen, __ATOMIC_RELEASE);
        }
        while (cudaEventQuery(done) == cudaErrorNotReady)
          ;
        us[i] = (now_ns() - from) / 1000.0;
      }
      qsort(us, frames, sizeof *us, cmp);
      static const char *kinds[] = { "real kernel, launched", "real kernel behind a stream wait",
                                     "armed real kernel" };
      printf("| %s, bell %s | %.2f | %.2f | |\n", kinds[c], where, us[frames / 2],
             us[frames * 9 / 10]);
    }
    /* Cancelled at once: the kernel must end without touching the result. */
    int touched = 0;
    for (int i = 0; i < frames; i++) {
      gen++;
      for (uint32_t j = 0; j < m; j++)
        result[j] = -1.0f;
      const pp_cuda_armed armed = { bell_copy, gen };
      if (wait_value(s, (CUdeviceptr) (uintptr_t) &d_bell->go, gen, CU_STREAM_WAIT_VALUE_EQ) !=
          CUDA_SUCCESS)
        return 1;
      CHECK(cudaMemcpyAsync(bell_copy, bell, sizeof *bell, cudaMemcpyHostToDevice, s));
      CHECK(pp_cuda_mlp_small_armed(s, &x, m, k, w, d, w + k * d, d, relu, w + k * d + d, NULL, 1,
                                    none, 2, &armed));
      __atomic_store_n(&bell->cancel, gen, __ATOMIC_RELEASE);
      __atomic_store_n(&bell->go, gen, __ATOMIC_RELEASE);
      CHECK(cudaStreamSynchronize(s));
      for (uint32_t j = 0; j < m; j++)
        touched += result[j] != -1.0f;
    }
    printf("| armed real kernel cancelled at once, bell %s | | | results written %d |\n", where,
           touched);
  }
  free(us);
  cudaEventDestroy(done);
  cudaFree(bell_copy);
  cudaFree(w);
  cudaFreeHost(bells[0]);
  cudaHostUnregister(bells[1]);
  free(bells[1]);
  cudaFreeHost(frame);
  cudaFreeHost(result);
  cudaStreamDestroy(s);
  cudaFreeHost(p);
  return 0;
}
