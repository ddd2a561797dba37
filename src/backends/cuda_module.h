/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The CUDA backend lives in a module of its own, libpingpong-cuda.so, which
 * links the CUDA runtime; nothing else in pingpong does (cuBLASLt is a
 * module of that module's, loaded only for plans that use it). The core
 * opens it (GModule) the first time something needs CUDA: a CUDA backend,
 * pinned host memory, or the device's primary context. A machine without
 * the CUDA libraries still loads the plugin and runs its CPU backend and
 * io_uring elements.
 *
 * The module exports one symbol, PP_CUDA_MODULE_ENTRY, returning this table. */
#ifndef PP_CUDA_MODULE_H
#define PP_CUDA_MODULE_H

#include <stddef.h>
#include <stdint.h>

#include "backend.h"
#include "cuda_timing.h"
#include "log.h"

/* Bumped whenever the table or anything it passes changes shape; the core
 * refuses a module built for another. */
#define PP_CUDA_MODULE_ABI (201 + PP_BACKEND_ABI)
#define PP_CUDA_MODULE_ENTRY "pp_cuda_module_entry"
#define PP_CUDA_MODULE_NAME "libpingpong-cuda.so"

typedef struct {
  uint32_t abi;
  /* Where the module's messages go: the core's handler (log.h). Called
   * once, right after the module is opened. */
  void (*set_log)(pp_log_write_fn write, pp_log_enabled_fn enabled);
  int (*backend_new)(const pp_backend_options *opts, pp_backend **out, char **msg);
  int (*host_register)(void *ptr, size_t bytes, char **msg);
  void (*host_unregister)(void *ptr);
  int (*time_stages)(pp_backend *b, const void *input, float *output, unsigned reps,
                     pp_cuda_stage_times *out, char **msg);
  int (*time_paths)(pp_backend *b, unsigned reps, pp_cuda_path_time *out, unsigned max, unsigned *n,
                    char **msg);
  /* Visible devices; 0 where the driver has none or fails. */
  int (*device_count)(void);
  /* The primary context (a CUcontext) of a device, made if need be. */
  int (*primary_context)(int device, void **context, char **msg);
  /* Loads cuBLASLt now, as a plan that runs layers on it would (it needs
   * no CUDA context): -ENOENT with a message where it cannot be loaded. */
  int (*preload_blas)(char **msg);
} pp_cuda_module;

typedef const pp_cuda_module *(*pp_cuda_module_entry_fn)(void);

/* The module, opened on the first call and kept for the life of the
 * process; NULL with a message that names the file and what the loader
 * missed (e.g. "libcudart.so.13: cannot open shared object file"). Safe
 * from any thread. */
const pp_cuda_module *pp_cuda_module_get(char **msg);

/* The device's primary CUDA context, for a pipeline to share; -ENOTSUP
 * without the module. */
int pp_cuda_primary_context(int device, void **context, char **msg);

/* Loads the CUDA module and cuBLASLt, which take 60-90 ms, before a plan
 * needs them; from any thread. -ENOTSUP without the module. */
int pp_cuda_preload_blas(char **msg);

#endif
