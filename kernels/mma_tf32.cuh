// SPDX-License-Identifier: LGPL-2.1-or-later
/* TF32 tensor-core building blocks (sm_80 and later), for the kernels that
 * run FP32 models on the tensor cores (mlp_chain.cu, mlp_wide.cu): a float
 * rounded to TF32, a float as two TF32 pieces, and the m16n8k8 product
 * with FP32 sums. PASSES = 3 is exact FP32 to about one ulp: each operand
 * split into two TF32 pieces, hi·hi + hi·lo + lo·hi (the lo·lo term is
 * below FP32's rounding); PASSES = 1 is TF32 (precision=tf32).
 *
 * Fragment layouts (PTX ISA, mma.m16n8k8 .tf32), g = lane / 4, t = lane % 4:
 * A (16×8, row): a0 (g, t), a1 (g+8, t), a2 (g, t+4), a3 (g+8, t+4);
 * B (8×8, col): b0 (k t, n g), b1 (k t+4, n g);
 * C (16×8): c0 (g, 2t), c1 (g, 2t+1), c2 (g+8, 2t), c3 (g+8, 2t+1). */
#ifndef PP_MMA_TF32_CUH
#define PP_MMA_TF32_CUH

#include <stdint.h>

namespace pp
{

__device__ __forceinline__ uint32_t
to_tf32(float v)
{
  uint32_t u;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(u) : "f"(v));
  return u;
}

/* v rounded to the nearest TF32, ties away from zero, in two integer
 * operations (pp_round_tf32 without its NaN check): half of the last
 * place added to the bits carries into the exponent when it must. For a
 * finite v, cvt.rna.tf32.f32's value, which sm_90 computes in several
 * instructions. */
__device__ __forceinline__ uint32_t
nearest_tf32_bits(float v)
{
  return (__float_as_uint(v) + 0x1000u) & 0xffffe000u;
}

/* v as hi (+ lo): two TF32 pieces whose sum is v to within FP32's rounding. */
template <int PASSES>
__device__ __forceinline__ void
split_tf32(float v, uint32_t &hi, uint32_t &lo)
{
  hi = to_tf32(v);
  lo = PASSES == 3 ? to_tf32(v - __uint_as_float(hi)) : 0u;
}

__device__ __forceinline__ void
mma_tf32(float (&c)[4], const uint32_t (&a)[4], const uint32_t (&b)[2])
{
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
               "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

/* v's bits as the pieces hi and lo of an exact product, in three simple
 * operations where split_tf32<3> takes two conversions of several each:
 * hi = v rounded to nearest TF32 (ties away from zero: half of its last
 * place added, the bits below cleared); lo = v - hi, exact in FP32, which
 * the tensor cores truncate to TF32 as they read it (an operand's low 13
 * bits are not read). Its error, below 2^-21 of v, is at most twice the
 * lo·lo term left out. A NaN whose payload carries past the sign bit
 * rounds hi to zero, and lo keeps it. For kernels that split every
 * fragment they read (mlp_wide.cu). */
__device__ __forceinline__ void
tf32_pieces(uint32_t v, uint32_t &hi, uint32_t &lo)
{
  hi = nearest_tf32_bits(__uint_as_float(v));
  lo = __float_as_uint(__uint_as_float(v) - __uint_as_float(hi));
}

/* c += a·b from the pieces: lo·hi and hi·lo first (the small terms), then
 * hi·hi; only hi·hi where PASSES = 1. */
template <int PASSES>
__device__ __forceinline__ void
mma_pieces(float (&c)[4], const uint32_t (&ah)[4], const uint32_t (&al)[4], const uint32_t (&bh)[2],
           const uint32_t (&bl)[2])
{
  if (PASSES == 3) {
    mma_tf32(c, al, bh);
    mma_tf32(c, ah, bl);
  }
  mma_tf32(c, ah, bh);
}

} // namespace pp

#endif
