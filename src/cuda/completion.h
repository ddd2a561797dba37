/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Reporting each frame's completion, in submission order, from the event
 * recorded after its work or the done signal its kernel raises: by a
 * thread of its own (completion=event-thread), or on the consumer's thread
 * just before it pops the frame (completion=consumer), which saves one
 * thread waking another on every frame. Either way the wait sleeps until
 * shortly before the frame is expected and polls from then on. */
#ifndef PP_CUDA_COMPLETION_H
#define PP_CUDA_COMPLETION_H

#include <cuda_runtime_api.h>
#include <stdint.h>

#include "backend.h"
#include "device.h"

/* A frame to watch. */
typedef struct {
  cudaEvent_t done;        /* recorded after its work (seq 0) */
  volatile unsigned *flag; /* its done signal's word */
  unsigned seq;            /* what its kernel writes there; 0: watch the event */
  cudaStream_t stream;     /* where a kernel's failure shows */
  int64_t submitted_ns;
} pp_pending_frame;

/* Called once per frame, in order, on the thread that saw it done. */
typedef void (*pp_completion_report_fn)(void *data, unsigned slot, cudaError_t err);

typedef struct pp_cuda_completion pp_cuda_completion;

/* `mode`: consumer or event-thread; `device` is bound on the waiting
 * thread. */
pp_cuda_completion *pp_cuda_completion_new(pp_completion mode, const pp_cuda_device *device,
                                           pp_completion_report_fn report, void *data);
/* After drain: stops the thread. */
void pp_cuda_completion_free(pp_cuda_completion *c);

/* A frame submitted on `slot`. */
void pp_cuda_completion_add(pp_cuda_completion *c, unsigned slot, const pp_pending_frame *f);
/* completion=consumer: waits at most `timeout_ns` for `slot`'s frame and
 * reports it; -EAGAIN while it runs. 0 also when drain reported it. */
int pp_cuda_completion_wait(pp_cuda_completion *c, unsigned slot, int64_t timeout_ns);
/* With the streams idle: reports what is left, and returns once nothing is
 * pending. */
void pp_cuda_completion_drain(pp_cuda_completion *c);

#endif
