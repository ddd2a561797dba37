// SPDX-License-Identifier: LGPL-2.1-or-later
/* A kernel allowed the most shared memory a block of the current device
 * may opt in to, once a device: the attribute is the device's, so a launch
 * outside a graph asks the driver nothing more. */
#ifndef PP_SMEM_OPTIN_CUH
#define PP_SMEM_OPTIN_CUH

#include <atomic>

#include <cuda_runtime.h>

namespace pp
{

/* *limit: the current device's opt-in limit a block, which KERNEL (a
 * __global__ function) is now allowed. */
template <auto KERNEL>
cudaError_t
allow_smem(int *limit)
{
  constexpr int DEVICES = 64;
  static std::atomic<int> limits[DEVICES]; /* 0: not yet allowed */
  int device = 0;
  cudaError_t err = cudaGetDevice(&device);
  if (err != cudaSuccess)
    return err;
  if (device < DEVICES && (*limit = limits[device].load(std::memory_order_acquire)) > 0)
    return cudaSuccess;
  err = cudaDeviceGetAttribute(limit, cudaDevAttrMaxSharedMemoryPerBlockOptin, device);
  if (err == cudaSuccess)
    err = cudaFuncSetAttribute(KERNEL, cudaFuncAttributeMaxDynamicSharedMemorySize, *limit);
  if (err == cudaSuccess && device < DEVICES)
    limits[device].store(*limit, std::memory_order_release);
  return err;
}

} // namespace pp

#endif
