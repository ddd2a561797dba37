// SPDX-License-Identifier: LGPL-2.1-or-later
/* A frame's done signal (pp_cuda_done_signal), raised at the end of a
 * kernel that does a frame's whole work: the host polls a word of its own
 * memory instead of recording an event after the kernel and querying it,
 * which costs a paced frame a driver call on each side. */
#ifndef PP_DONE_SIGNAL_CUH
#define PP_DONE_SIGNAL_CUH

#include "cuda_kernels.h"

namespace pp
{

/* Called by every thread of every block once its results are written. Each
 * block makes its writes visible to the host before it counts itself done,
 * so the last to count knows every block's are, and only then writes the
 * sequence number (the threadFenceReduction pattern, at system scope). */
__device__ __forceinline__ void
raise_done(const pp_cuda_done_signal &done)
{
  if (!done.flag)
    return;
  __threadfence_system();
  __syncthreads();
  if (threadIdx.x == 0 && atomicAdd(done.count, 1u) == gridDim.x * gridDim.y * gridDim.z - 1) {
    *done.count = 0; /* the next frame's kernel runs after this one on the stream */
    __threadfence_system();
    *done.flag = done.seq;
  }
}

} // namespace pp

#endif
