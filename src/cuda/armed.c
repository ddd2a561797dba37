/* A paced frame's kernel queued before the frame (pp_backend_ops.arm).
 *
 * A frame read in place by the `small` kernel costs its submit one launch
 * and one event record, ~7 µs from a warm thread, and the GPU starts it a
 * few µs after that (tiny, 1 kHz, H100: submit 16-20 µs of a 26-28 µs
 * frame; docs/PERFORMANCE.md). The engine's consumer knows when the next
 * frame is due and which slot it goes to (engine_paced.c), so it queues
 * that frame's kernel ahead, behind a cuStreamWaitValue32 on the slot's
 * doorbell (pp_cuda_bell, mapped host memory) and a copy of the bell to
 * the device (kernels/doorbell.cuh says why), with the slot's done event
 * behind it. The frame's submit then only writes where the frame and its
 * result are and rings: no call into the driver. Meanwhile the GPU's
 * front end holds the stream; no SM is taken.
 *
 * A stream held by a wait can hold back work of other streams that share
 * its hardware queue (CUDA's warning on stream memory operations): for at
 * most the engine's watch, 200 µs, as every arm ends by then.
 * PINGPONG_CUDA_ARM=0 turns arming off.
 *
 * Each arm has a generation. It ends exactly once: rung by the slot's next
 * submit, cancelled by disarm (no frame came) or by sync, whichever takes
 * the slot's `armed` flag first. A job the kernel cannot take (a frame in
 * device memory) cancels it and runs the usual way behind it on the same
 * stream. */
#include <errno.h>

#include "backend_cuda_priv.h"

/* cuStreamWaitValue32's flag: wait until *addr == value. */
#define WAIT_VALUE_EQ 0x1

typedef int (*wait_value_fn)(cudaStream_t stream, unsigned long long addr, uint32_t value,
                             unsigned flags);

/* The driver's cuStreamWaitValue32 through the runtime, so nothing links
 * libcuda; NULL where the driver has none. */
static wait_value_fn
find_wait_value(void)
{
  static gsize done;
  static wait_value_fn fn;
  if (g_once_init_enter(&done)) {
    void *entry = NULL;
    enum cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
    if (cudaGetDriverEntryPointByVersion("cuStreamWaitValue32", &entry, 12000, cudaEnableDefault,
                                         &found) == cudaSuccess &&
        found == cudaDriverEntryPointSuccess)
      fn = (wait_value_fn) entry;
    g_once_init_leave(&done, 1);
  }
  return fn;
}

int
cuda_arm_setup(cuda_backend *b, cuda_slot *s, char **msg)
{
  b->arm = g_strcmp0(g_getenv("PINGPONG_CUDA_ARM"), "0") != 0 && find_wait_value();
  s->bell = cuda_bell_alloc(sizeof *s->bell, msg);
  if (!s->bell)
    return -ENOMEM;
  CUDA_CHECK(cudaHostGetDevicePointer((void **) &s->d_bell, s->bell, 0));
  CUDA_CHECK(cudaMalloc((void **) &s->bell_copy, sizeof *s->bell_copy));
  return 0;
}

void
cuda_arm_free(cuda_slot *s)
{
  cuda_bell_free(s->bell);
  cudaFree(s->bell_copy);
  s->bell = NULL;
  s->bell_copy = NULL;
}

/* Whether frames may be handed to a kernel queued ahead: read in place by
 * the one whole-MLP kernel that can read its doorbell, and not timed
 * frame by frame (a trace), as an armed frame's MLP has no start event. */
static bool
armable(const cuda_backend *b)
{
  return b->arm && b->zero_copy && b->whole == PP_PATH_SMALL &&
         b->completion != PP_COMPLETION_HOST_FUNC && b->timing_period > 1;
}

const char *
cuda_arm_describe(const cuda_backend *b)
{
  return armable(b) ? ", paced frames armed" : "";
}

/* Ends generation `gen` without a frame: cancel, then go, which releases
 * the stream. */
static void
cancel(pp_cuda_bell *bell, uint32_t gen)
{
  __atomic_store_n(&bell->cancel, gen, __ATOMIC_RELEASE);
  __atomic_store_n(&bell->go, gen, __ATOMIC_RELEASE);
}

int
cuda_arm(pp_backend *base, unsigned index)
{
  cuda_backend *b = (cuda_backend *) base;
  if (index >= b->n_slots || !armable(b))
    return -ENOTSUP;
  cuda_slot *s = &b->slots[index];
  if (__atomic_load_n(&s->armed, __ATOMIC_ACQUIRE))
    return 0;
  if (cuda_bind_context(b) != cudaSuccess)
    return -EIO;
  const pp_cuda_armed armed = { .bell = s->bell_copy, .gen = s->arm_gen + 1 };
  s->arm_gen = armed.gen;
  if (find_wait_value()(s->stream, (unsigned long long) (uintptr_t) &s->d_bell->go, armed.gen,
                        WAIT_VALUE_EQ) != 0) {
    b->arm = false; /* refused: not on this device or driver */
    return -ENOTSUP;
  }
  const cuda_layer *l0 = &b->layers[0], *l1 = &b->layers[1];
  if (cudaMemcpyAsync(s->bell_copy, s->bell, sizeof *s->bell, cudaMemcpyHostToDevice, s->stream) !=
          cudaSuccess ||
      pp_cuda_mlp_small_armed(s->stream, &s->x, b->layout.n, b->layout.k, l0->wt, l0->ldw, l0->b,
                              l0->out, l0->act, l1->w, l1->b, l1->out, l1->act, b->small_rows,
                              &armed) != cudaSuccess ||
      cudaEventRecord(s->ev_done, s->stream) != cudaSuccess) {
    /* Release the stream: whatever was queued ends at once. */
    cancel(s->bell, armed.gen);
    return -EIO;
  }
  __atomic_store_n(&s->armed, true, __ATOMIC_RELEASE);
  return 0;
}

/* Takes the slot's arm, if it has one: true for the one caller that does. */
static bool
take_arm(cuda_slot *s)
{
  bool expected = true;
  return __atomic_compare_exchange_n(&s->armed, &expected, false, false, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE);
}

void
cuda_disarm(pp_backend *base, unsigned index)
{
  cuda_backend *b = (cuda_backend *) base;
  if (index < b->n_slots && take_arm(&b->slots[index]))
    cancel(b->slots[index].bell, b->slots[index].arm_gen);
}

void
cuda_disarm_all(cuda_backend *b)
{
  for (unsigned i = 0; i < b->n_slots; i++)
    cuda_disarm(&b->base, i);
}

bool
cuda_ring(cuda_backend *b, cuda_slot *s, const void *src, float *dst)
{
  if (!take_arm(s))
    return false;
  if (!src) {
    cancel(s->bell, s->arm_gen);
    return false;
  }
  s->bell->input = src;
  s->bell->output = dst;
  __atomic_store_n(&s->bell->go, s->arm_gen, __ATOMIC_RELEASE);
  __atomic_add_fetch(&b->base.armed_inputs, 1, __ATOMIC_RELAXED);
  return true;
}
