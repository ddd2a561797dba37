// SPDX-License-Identifier: LGPL-2.1-or-later
/* 16-bit tensor-core building blocks (sm_80 and later): 16- and 4-byte
 * copies to shared memory (cp.async), fragments from shared memory (ldmatrix), the
 * m16n8k16 product with FP32 sums for bf16 and f16, and values rounded to
 * those types. */
#ifndef PP_MMA16_CUH
#define PP_MMA16_CUH

#include "activation.h"
#include "dtype.cuh"

namespace pp
{

__device__ __forceinline__ unsigned
smem_addr(const void *p)
{
  return (unsigned) __cvta_generic_to_shared(p);
}

__device__ __forceinline__ void
ldsm_x4(uint32_t (&r)[4], const void *p)
{
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p)));
}

__device__ __forceinline__ void
cp_async16(void *smem, const void *global)
{
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(smem_addr(smem)), "l"(global));
}

/* A word, or zeros where !ok (global is then not read). */
__device__ __forceinline__ void
cp_async4(void *smem, const void *global, bool ok)
{
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;" ::"r"(smem_addr(smem)), "l"(global),
               "r"(ok ? 4 : 0));
}

__device__ __forceinline__ void
mma16(float (&c)[4], const uint32_t (&a)[4], const uint32_t (&b)[2], __nv_bfloat16)
{
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
               "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

__device__ __forceinline__ void
mma16(float (&c)[4], const uint32_t (&a)[4], const uint32_t (&b)[2], __half)
{
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
               "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

/* Two values rounded to T, side by side. */
template <typename T>
__device__ __forceinline__ uint32_t
pack2(float a, float b)
{
  const T v[2] = { pp::from_float<T>(a), pp::from_float<T>(b) };
  uint32_t u;
  memcpy(&u, v, sizeof u);
  return u;
}

/* v rounded to T, as a float. */
template <typename T>
__device__ __forceinline__ float
rounded(float v)
{
  return pp::to_float(pp::from_float<T>(v));
}

/* A hidden layer's activation of its sum v (bias added) at a 16-bit
 * precision, A its template code (activation.cuh): as the per-layer path
 * computes it, v rounded to T, then the activation, which the store
 * rounds again. Identity and ReLU give the same value without the first
 * rounding (rounding to T is monotonic and keeps zero and the sign), so
 * theirs is left out: one conversion a value fewer. */
template <typename T, int A>
__device__ __forceinline__ float
hidden_act(pp_act act, float v)
{
  if constexpr (A == PP_ACT_IDENTITY || A == PP_ACT_RELU)
    return pp_act_apply(act, v);
  else
    return pp_act_apply(act, rounded<T>(v));
}

} // namespace pp

#endif
