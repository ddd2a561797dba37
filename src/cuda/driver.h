/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The few CUDA driver calls the backend needs for contexts, looked up once
 * through the runtime (cudaGetDriverEntryPointByVersion), so nothing links
 * libcuda: a machine without a driver still loads the module. */
#ifndef PP_CUDA_DRIVER_H
#define PP_CUDA_DRIVER_H

typedef struct {
  int (*ctx_get_current)(void **ctx);
  int (*ctx_set_current)(void *ctx);
  int (*ctx_get_device)(int *device);
} pp_cuda_driver;

/* NULL where the driver lacks any of them. Safe from any thread. */
const pp_cuda_driver *pp_cuda_driver_get(void);

#endif
