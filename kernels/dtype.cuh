// SPDX-License-Identifier: LGPL-2.1-or-later
/* pp_dtype on the device: each type's C++ type, loads and stores through
 * float (stores round to nearest, ties to even, as pp_dtype_round does on
 * the host), and the one switch from a runtime pp_dtype to a kernel
 * template: PP_DTYPE_DISPATCH(t, T, body) runs body with T the type. */
#ifndef PP_DTYPE_CUH
#define PP_DTYPE_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "dtype.h"

namespace pp
{

__device__ __forceinline__ float
to_float(float v)
{
  return v;
}
__device__ __forceinline__ float
to_float(__nv_bfloat16 v)
{
  return __bfloat162float(v);
}
__device__ __forceinline__ float
to_float(__half v)
{
  return __half2float(v);
}

template <typename T> __device__ __forceinline__ T from_float(float v);
template <>
__device__ __forceinline__ float
from_float<float>(float v)
{
  return v;
}
template <>
__device__ __forceinline__ __nv_bfloat16
from_float<__nv_bfloat16>(float v)
{
  return __float2bfloat16_rn(v);
}
template <>
__device__ __forceinline__ __half
from_float<__half>(float v)
{
  return __float2half_rn(v);
}

} // namespace pp

#define PP_DTYPE_DISPATCH(t, T, ...)                                                               \
  do {                                                                                             \
    switch (t) {                                                                                   \
      case PP_DTYPE_BF16: {                                                                        \
        using T = __nv_bfloat16;                                                                   \
        __VA_ARGS__;                                                                               \
        break;                                                                                     \
      }                                                                                            \
      case PP_DTYPE_F16: {                                                                         \
        using T = __half;                                                                          \
        __VA_ARGS__;                                                                               \
        break;                                                                                     \
      }                                                                                            \
      default: {                                                                                   \
        using T = float;                                                                           \
        __VA_ARGS__;                                                                               \
        break;                                                                                     \
      }                                                                                            \
    }                                                                                              \
  } while (0)

#endif
