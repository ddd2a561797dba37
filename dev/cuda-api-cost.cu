// SPDX-License-Identifier: LGPL-2.1-or-later
/* cuda-api-cost: what each CUDA runtime call the per-frame path could use
 * costs the calling CPU thread on this machine, in microseconds (median of
 * batches), so the backend's choice of calls rests on numbers:
 *
 *   cuda-api-cost [frame_bytes]
 *
 * Host memory is anonymous memory pinned with cudaHostRegister, as the
 * element's pool allocates it, and cudaHostAlloc memory for comparison. */
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include <thread>

#include "cuda_check.cuh"

static double
now_us()
{
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int
compare_doubles(const void *a, const void *b)
{
  const double x = *(const double *) a, y = *(const double *) b;
  return (x > y) - (x < y);
}

__global__ void
empty_kernel()
{
}

static void CUDART_CB
empty_host_func(void *)
{
}

static cudaStream_t stream;
static const int kBatch = 200, kBatches = 9;

/* CPU time per call of `op`, median over batches; the stream drains between
 * batches so a full queue does not block the calls. */
template <class F>
static double
per_call_us(F op)
{
  double samples[kBatches];
  for (int b = 0; b < kBatches; b++) {
    const double t0 = now_us();
    for (int i = 0; i < kBatch; i++)
      op(i);
    samples[b] = (now_us() - t0) / kBatch;
    CHECK(cudaStreamSynchronize(stream));
  }
  for (int i = 1; i < kBatches; i++)
    for (int j = i; j > 0 && samples[j] < samples[j - 1]; j--) {
      double t = samples[j];
      samples[j] = samples[j - 1];
      samples[j - 1] = t;
    }
  return samples[kBatches / 2];
}

static void *
registered(size_t bytes)
{
  void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  memset(p, 1, bytes);
  CHECK(cudaHostRegister(p, bytes, cudaHostRegisterPortable));
  return p;
}

/* A frame's calls: one launch and one event record, timed (µs) as the calls
 * alone and as the round trip until the event is seen done. */
static void
time_frame_calls(cudaStream_t stream, cudaEvent_t event, double *calls, double *trip)
{
  const double t0 = now_us();
  empty_kernel<<<1, 32, 0, stream>>>();
  CHECK(cudaEventRecord(event, stream));
  *calls = now_us() - t0;
  while (cudaEventQuery(event) == cudaErrorNotReady)
    ;
  *trip = now_us() - t0;
}

int
main(int argc, char **argv)
{
  const size_t big = argc > 1 ? strtoull(argv[1], NULL, 0) : 6220800; /* an hd frame */
  const size_t small = 4096;
  CHECK(cudaSetDevice(0));
  CHECK(cudaFree(0));
  CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaEvent_t event;
  CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
  void *dev;
  CHECK(cudaMalloc(&dev, big));
  void *reg_a = registered(big), *reg_b = registered(big), *alloc;
  CHECK(cudaHostAlloc(&alloc, big, cudaHostAllocDefault));

  printf("| call | µs per call |\n|---|---|\n");
#define ROW(name, expr)                                                                            \
  printf("| %s | %.2f |\n", name, per_call_us([&](int i) {                                         \
           (void) i;                                                                               \
           expr;                                                                                   \
         }))
  ROW("cudaSetDevice (already current)", CHECK(cudaSetDevice(0)));
  ROW("cudaEventRecord", CHECK(cudaEventRecord(event, stream)));
  ROW("cudaStreamQuery", cudaStreamQuery(stream));
  printf("| empty kernel launch | %.2f |\n", per_call_us([&](int) {
           empty_kernel<<<1, 32, 0, stream>>>();
           CHECK(cudaGetLastError());
         }));
  ROW("cudaLaunchHostFunc (empty)", CHECK(cudaLaunchHostFunc(stream, empty_host_func, NULL)));
  ROW("cudaMemcpyAsync H2D 4 KB, registered",
      CHECK(cudaMemcpyAsync(dev, reg_a, small, cudaMemcpyHostToDevice, stream)));
  ROW("cudaMemcpyAsync H2D 4 KB, cudaHostAlloc",
      CHECK(cudaMemcpyAsync(dev, alloc, small, cudaMemcpyHostToDevice, stream)));
  ROW("cudaMemcpyAsync H2D frame, registered",
      CHECK(cudaMemcpyAsync(dev, i % 2 ? reg_a : reg_b, big, cudaMemcpyHostToDevice, stream)));
  ROW("cudaMemcpyAsync H2D frame, cudaHostAlloc",
      CHECK(cudaMemcpyAsync(dev, alloc, big, cudaMemcpyHostToDevice, stream)));
  ROW("cudaMemcpyAsync D2H 4 KB, registered",
      CHECK(cudaMemcpyAsync(reg_a, dev, small, cudaMemcpyDeviceToHost, stream)));

  /* A frame-shaped graph: H2D, kernel, D2H; then with a host node; then
   * with four timing events (external event-record nodes) instead. */
  cudaEvent_t marks[4];
  for (int i = 0; i < 4; i++)
    CHECK(cudaEventCreate(&marks[i]));
  for (int variant = 0; variant < 3; variant++) {
    const int with_host = variant == 1, with_events = variant == 2;
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    if (with_events)
      CHECK(cudaEventRecordWithFlags(marks[0], stream, cudaEventRecordExternal));
    CHECK(cudaMemcpyAsync(dev, reg_a, small, cudaMemcpyHostToDevice, stream));
    if (with_events)
      CHECK(cudaEventRecordWithFlags(marks[1], stream, cudaEventRecordExternal));
    empty_kernel<<<1, 32, 0, stream>>>();
    if (with_events)
      CHECK(cudaEventRecordWithFlags(marks[2], stream, cudaEventRecordExternal));
    CHECK(cudaMemcpyAsync(reg_a, dev, small, cudaMemcpyDeviceToHost, stream));
    if (with_events)
      CHECK(cudaEventRecordWithFlags(marks[3], stream, cudaEventRecordExternal));
    if (with_host)
      CHECK(cudaLaunchHostFunc(stream, empty_host_func, NULL));
    CHECK(cudaStreamEndCapture(stream, &graph));
    CHECK(cudaGraphInstantiate(&exec, graph, 0));
    size_t n = 0;
    CHECK(cudaGraphGetNodes(graph, NULL, &n));
    cudaGraphNode_t nodes[8];
    CHECK(cudaGraphGetNodes(graph, nodes, &n));
    cudaGraphNode_t h2d = NULL;
    for (size_t i = 0; i < n; i++) {
      cudaGraphNodeType type;
      CHECK(cudaGraphNodeGetType(nodes[i], &type));
      if (type == cudaGraphNodeTypeMemcpy && !h2d)
        h2d = nodes[i];
    }
    printf("| cudaGraphLaunch, 3 nodes%s | %.2f |\n",
           with_host     ? " + host node"
           : with_events ? " + 4 event-record nodes"
                         : "",
           per_call_us([&](int) { CHECK(cudaGraphLaunch(exec, stream)); }));
    if (variant == 0) {
      printf("| cudaGraphExecMemcpyNodeSetParams1D (alternating buffers) | %.2f |\n",
             per_call_us([&](int i) {
               CHECK(cudaGraphExecMemcpyNodeSetParams1D(exec, h2d, dev, i % 2 ? reg_a : reg_b,
                                                        small, cudaMemcpyHostToDevice));
             }));
      printf("| set params + cudaGraphLaunch | %.2f |\n", per_call_us([&](int i) {
               CHECK(cudaGraphExecMemcpyNodeSetParams1D(exec, h2d, dev, i % 2 ? reg_a : reg_b,
                                                        small, cudaMemcpyHostToDevice));
               CHECK(cudaGraphLaunch(exec, stream));
             }));
    }
    CHECK(cudaGraphExecDestroy(exec));
    CHECK(cudaGraphDestroy(graph));
  }
  /* Frame-sized copies in a graph, re-pointed at another pinned buffer
   * before each launch, as a pool of frames would need. */
  {
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    void *out_a = registered(big), *out_b = registered(big), *dev_out;
    CHECK(cudaMalloc(&dev_out, big));
    CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    CHECK(cudaMemcpyAsync(dev, reg_a, big, cudaMemcpyHostToDevice, stream));
    empty_kernel<<<1, 32, 0, stream>>>();
    CHECK(cudaMemcpyAsync(out_a, dev_out, big, cudaMemcpyDeviceToHost, stream));
    CHECK(cudaStreamEndCapture(stream, &graph));
    CHECK(cudaGraphInstantiate(&exec, graph, 0));
    size_t n = 0;
    cudaGraphNode_t nodes[8], copies[2];
    CHECK(cudaGraphGetNodes(graph, NULL, &n));
    CHECK(cudaGraphGetNodes(graph, nodes, &n));
    int found = 0;
    for (size_t i = 0; i < n; i++) {
      cudaGraphNodeType type;
      CHECK(cudaGraphNodeGetType(nodes[i], &type));
      if (type == cudaGraphNodeTypeMemcpy && found < 2)
        copies[found++] = nodes[i];
    }
    cudaMemcpy3DParms p0, p1;
    CHECK(cudaGraphMemcpyNodeGetParams(copies[0], &p0));
    CHECK(cudaGraphMemcpyNodeGetParams(copies[1], &p1));
    const int h2d = p0.srcPtr.ptr == reg_a ? 0 : 1;
    printf("| frame-sized copy nodes re-pointed (H2D and D2H) + cudaGraphLaunch | %.2f |\n",
           per_call_us([&](int i) {
             CHECK(cudaGraphExecMemcpyNodeSetParams1D(exec, copies[h2d], dev, i % 2 ? reg_a : reg_b,
                                                      big, cudaMemcpyHostToDevice));
             CHECK(cudaGraphExecMemcpyNodeSetParams1D(exec, copies[1 - h2d], i % 2 ? out_a : out_b,
                                                      dev_out, big, cudaMemcpyDeviceToHost));
             CHECK(cudaGraphLaunch(exec, stream));
           }));
    printf(
        "| the same as direct calls: 2 × cudaMemcpyAsync + kernel | %.2f |\n",
        per_call_us([&](int i) {
          CHECK(cudaMemcpyAsync(dev, i % 2 ? reg_a : reg_b, big, cudaMemcpyHostToDevice, stream));
          empty_kernel<<<1, 32, 0, stream>>>();
          CHECK(
              cudaMemcpyAsync(i % 2 ? out_a : out_b, dev_out, big, cudaMemcpyDeviceToHost, stream));
        }));
    CHECK(cudaGraphExecDestroy(exec));
    CHECK(cudaGraphDestroy(graph));
  }
  /* The round trip: from enqueueing an empty kernel + host func to the
   * callback running. */
  {
    static volatile double landed;
    double total = 0;
    for (int i = 0; i < 200; i++) {
      landed = 0;
      const double t0 = now_us();
      empty_kernel<<<1, 32, 0, stream>>>();
      CHECK(cudaLaunchHostFunc(
          stream, [](void *) { landed = now_us(); }, NULL));
      while (landed == 0)
        ;
      total += landed - t0;
    }
    printf("| kernel + host func, enqueue to callback (round trip) | %.2f |\n", total / 200);
    cudaEvent_t blocking;
    CHECK(cudaEventCreateWithFlags(&blocking, cudaEventDisableTiming | cudaEventBlockingSync));
    total = 0;
    for (int i = 0; i < 200; i++) {
      const double t0 = now_us();
      empty_kernel<<<1, 32, 0, stream>>>();
      CHECK(cudaEventRecord(blocking, stream));
      CHECK(cudaEventSynchronize(blocking));
      total += now_us() - t0;
    }
    printf("| kernel + blocking-sync event, enqueue to wake-up (round trip) | %.2f |\n",
           total / 200);
    total = 0;
    for (int i = 0; i < 200; i++) {
      const double t0 = now_us();
      empty_kernel<<<1, 32, 0, stream>>>();
      CHECK(cudaEventRecord(event, stream));
      while (cudaEventQuery(event) == cudaErrorNotReady)
        ;
      total += now_us() - t0;
    }
    printf("| kernel + polled event, enqueue to done (round trip) | %.2f |\n", total / 200);
  }
  /* A live source's frame: the GPU and the calling thread idle for a
   * while, then one launch and one event record. Whether the calls cost
   * more after the thread slept (woken by the kernel) than after it spun
   * through the same time tells a cold thread from an idle GPU. */
  for (int sleeping = 0; sleeping < 2; sleeping++) {
    for (int idle_us = 10; idle_us <= 1000; idle_us *= 10) {
      double calls[200], trip[200];
      for (int i = 0; i < 200; i++) {
        if (sleeping) {
          const timespec pause = { 0, idle_us * 1000L };
          nanosleep(&pause, NULL);
        } else {
          const double until = now_us() + idle_us;
          while (now_us() < until)
            ;
        }
        time_frame_calls(stream, event, &calls[i], &trip[i]);
      }
      qsort(calls, 200, sizeof(double), compare_doubles);
      qsort(trip, 200, sizeof(double), compare_doubles);
      printf("| after %s %d µs: kernel launch + event record, p50 / p90 | %.2f / %.2f |\n",
             sleeping ? "sleeping" : "spinning", idle_us, calls[100], calls[180]);
      printf("| after %s %d µs: round trip to the event seen done, p50 / p90 | %.2f / %.2f |\n",
             sleeping ? "sleeping" : "spinning", idle_us, trip[100], trip[180]);
    }
  }
  /* A camera's frame: everything idle for 33 ms (30 fps). Then the same
   * with a warm-up 200 µs before the frame (an empty kernel, its event
   * polled done), by the frame's thread or by another thread on a stream
   * of its own: whether what a long idle costs is the thread's or the
   * GPU's and the bus's, and whether waking them early buys it back. */
  cudaStream_t side;
  cudaEvent_t side_event;
  CHECK(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking));
  CHECK(cudaEventCreateWithFlags(&side_event, cudaEventDisableTiming));
  auto warm_up = [](cudaStream_t on, cudaEvent_t ev) {
    double calls, trip;
    time_frame_calls(on, ev, &calls, &trip);
  };
  auto sleep_until = [](double t_us) {
    const double left = t_us - now_us();
    if (left > 0) {
      const timespec pause = { (time_t) (left / 1e6), (long) (fmod(left, 1e6) * 1000) };
      nanosleep(&pause, NULL);
    }
  };
  static const char *const warmers[] = { "no warm-up", "warm-up by the same thread",
                                         "warm-up by another thread" };
  for (int warmer = 0; warmer < 3; warmer++) {
    enum { FRAMES = 40 };
    const double period_us = 33333, lead_us = 200;
    double calls[FRAMES], trip[FRAMES];
    for (int i = 0; i < FRAMES; i++) {
      const double frame_at = now_us() + period_us;
      std::thread helper;
      if (warmer == 2)
        helper = std::thread([&] {
          cudaSetDevice(0);
          sleep_until(frame_at - lead_us);
          warm_up(side, side_event);
        });
      if (warmer == 1) {
        sleep_until(frame_at - lead_us);
        warm_up(stream, event);
      }
      sleep_until(frame_at);
      time_frame_calls(stream, event, &calls[i], &trip[i]);
      if (helper.joinable())
        helper.join();
    }
    qsort(calls, FRAMES, sizeof(double), compare_doubles);
    qsort(trip, FRAMES, sizeof(double), compare_doubles);
    printf("| after 33 ms idle, %s: kernel launch + event record, p50 / p90 | %.2f / %.2f |\n",
           warmers[warmer], calls[FRAMES / 2], calls[FRAMES * 9 / 10]);
    printf("| after 33 ms idle, %s: round trip to the event seen done, p50 / p90 | %.2f / %.2f "
           "|\n",
           warmers[warmer], trip[FRAMES / 2], trip[FRAMES * 9 / 10]);
  }
  return 0;
}
