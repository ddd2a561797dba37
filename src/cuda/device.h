/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The device a backend runs on: its context (the device's primary one, or
 * one the pipeline shares), a stream for set-up work, and what it is, for
 * the plan cache's key. Every thread binds the context before its CUDA
 * calls. */
#ifndef PP_CUDA_DEVICE_H
#define PP_CUDA_DEVICE_H

#include <cuda_runtime_api.h>
#include <stdbool.h>

typedef struct {
  int ordinal;
  void *context; /* CUcontext: the one adopted, or the primary one */
  bool adopted;
  cudaStream_t setup; /* non-blocking: weight uploads, set-up copies */
  /* Registered host pointers are device pointers: kernels may read pinned
   * frames in place (frames=in-place). */
  bool host_pointers;
  /* "NVIDIA H100 80GB HBM3 uuid=… sm=132 cc=9.0 driver=13000 runtime=13000":
   * what a plan tuned here depends on. */
  char identity[256];
} pp_cuda_device;

/* Opens device `ordinal`, in `context` (a CUcontext on that device) or,
 * with NULL, in the device's primary context. -ENODEV with a message when
 * there is no such device. */
int pp_cuda_device_open(pp_cuda_device *d, int ordinal, void *context, char **msg);
void pp_cuda_device_close(pp_cuda_device *d);
/* Makes the device's context current on the calling thread. */
cudaError_t pp_cuda_device_bind(const pp_cuda_device *d);

/* Visible devices; 0 where the driver has none or fails. */
int pp_cuda_device_count(void);
/* The primary context of device `ordinal`, made now if need be, for a
 * pipeline to share (the plugin wraps it in a GstCudaContext). */
int pp_cuda_device_primary_context(int ordinal, void **context, char **msg);

#endif
