/* A kernel queued before its frame reads where the frame is from its
 * doorbell (pp_cuda_bell, cuda_kernels.h). Its stream waited for the
 * bell's `go` in host memory (cuStreamWaitValue32), then copied the bell
 * into device memory, which is what the kernel reads (src/cuda/armed.c).
 *
 * Why a copy: with every block reading the bell in host memory itself
 * (ld.global.cv, or ld.acquire.sys, once per block), tiny's kernel took
 * 380-530 µs instead of ~6 on the H100: its 128 blocks' reads of system
 * memory, each made to miss the GPU's caches, took turns
 * (tools/arm-probe). */
#ifndef PP_DOORBELL_CUH
#define PP_DOORBELL_CUH

#include "cuda_kernels.h"

namespace pp
{

/* Block-wide: true, with the frame's input and output, if the bell rang
 * armed.gen for a frame; false if the host cancelled it. */
__device__ bool
await_bell(const pp_cuda_armed &armed, const void **input, float **output)
{
  __shared__ int rang;
  __shared__ const void *in;
  __shared__ float *out;
  if (threadIdx.x == 0) {
    const pp_cuda_bell *bell = armed.bell;
    rang = bell->cancel != armed.gen;
    if (rang) {
      in = bell->input;
      out = bell->output;
    }
  }
  __syncthreads();
  if (!rang)
    return false;
  *input = in;
  *output = out;
  return true;
}

} // namespace pp

#endif
