/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The one symbol libpingpong-cuda.so exports (cuda_module.h). */
#include <errno.h>
#include <gmodule.h>

#include "bench_timing.h"
#include "cuda_backend.h"
#include "cuda_module.h"
#include "lt_loader.h"
#include "pinned.h"

static int
preload_blas(char **msg)
{
  return pp_lt_get(NULL, msg) ? 0 : -ENOENT;
}

static const pp_cuda_module table = {
  .abi = PP_CUDA_MODULE_ABI,
  .set_log = pp_log_set_handler,
  .backend_new = cuda_backend_new,
  .host_register = pp_pinned_register,
  .host_unregister = pp_pinned_unregister,
  .time_stages = cuda_bench_time_stages,
  .time_paths = cuda_bench_time_paths,
  .device_count = pp_cuda_device_count,
  .primary_context = pp_cuda_device_primary_context,
  .preload_blas = preload_blas,
};

G_MODULE_EXPORT const pp_cuda_module *pp_cuda_module_entry(void);

const pp_cuda_module *
pp_cuda_module_entry(void)
{
  return &table;
}
