// SPDX-License-Identifier: LGPL-2.1-or-later
/* What a kernel may do on the current device, set and asked once a device
 * (once_a_device.cuh): the most shared memory a block may opt in to, and
 * whether its sm_90a code runs there. */
#ifndef PP_KERNEL_ON_DEVICE_CUH
#define PP_KERNEL_ON_DEVICE_CUH

#include "once_a_device.cuh"

namespace pp
{

/* *limit: the current device's opt-in limit a block, which KERNEL (a
 * __global__ function) is now allowed. */
template <auto KERNEL>
cudaError_t
allow_smem(int *limit)
{
  return once_a_device<KERNEL>(limit, [](int device, int *v) {
    cudaError_t err = cudaDeviceGetAttribute(v, cudaDevAttrMaxSharedMemoryPerBlockOptin, device);
    if (err == cudaSuccess)
      err = cudaFuncSetAttribute(KERNEL, cudaFuncAttributeMaxDynamicSharedMemorySize, *v);
    return err;
  });
}

/* *yes: whether the current device runs KERNEL's sm_90a code (where its
 * build has some: wgmma, which the compute_90 PTX compiled for the device
 * lacks). */
template <auto KERNEL>
cudaError_t
runs_sm90a(bool *yes)
{
  int v = 0;
  const cudaError_t err = once_a_device<KERNEL>(&v, [](int, int *v) {
    cudaFuncAttributes attr;
    const cudaError_t e = cudaFuncGetAttributes(&attr, KERNEL);
    *v = e == cudaSuccess && attr.binaryVersion == 90 ? 2 : 1;
    return e;
  });
  *yes = v == 2;
  return err;
}

} // namespace pp

#endif
