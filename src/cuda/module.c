/* The one symbol libpingpong-cuda.so exports (cuda_module.h). */
#include <gmodule.h>

#include "backend_cuda_priv.h"
#include "cuda_module.h"

static const pp_cuda_module table = {
  .abi = PP_CUDA_MODULE_ABI,
  .backend_new = cuda_backend_new,
  .host_register = cuda_host_register,
  .host_unregister = cuda_host_unregister,
  .time_stages = cuda_time_stages,
  .time_paths = cuda_time_paths,
  .path_name = cuda_path_name,
  .device_count = cuda_device_count,
};

G_MODULE_EXPORT const pp_cuda_module *pp_cuda_module_entry(void);

const pp_cuda_module *
pp_cuda_module_entry(void)
{
  return &table;
}
