// SPDX-License-Identifier: LGPL-2.1-or-later
/* A value of the current device asked of the driver once a device: the
 * kernels' launchers ask what a device allows or runs before each launch,
 * and outside a graph that would be a driver call every frame. */
#ifndef PP_ONCE_A_DEVICE_CUH
#define PP_ONCE_A_DEVICE_CUH

#include <atomic>

#include <cuda_runtime.h>

namespace pp
{

/* *value: what ask(device, value) gave for the current device, a positive
 * int, asked the first time only. Each KEY and ask its own cache. Devices
 * past the 64th are asked every time. */
template <auto KEY, typename Ask>
cudaError_t
once_a_device(int *value, Ask ask)
{
  constexpr int DEVICES = 64;
  static std::atomic<int> known[DEVICES]; /* 0: not asked yet */
  int device = 0;
  cudaError_t err = cudaGetDevice(&device);
  if (err != cudaSuccess)
    return err;
  if (device < DEVICES && (*value = known[device].load(std::memory_order_acquire)) > 0)
    return cudaSuccess;
  err = ask(device, value);
  const bool answered = err == cudaSuccess && *value > 0;
  if (answered && device < DEVICES)
    known[device].store(*value, std::memory_order_release);
  return err;
}

} // namespace pp

#endif
