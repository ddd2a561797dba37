// SPDX-License-Identifier: LGPL-2.1-or-later
/* The element types a tensor may hold on the device, and their rounding on
 * the host. The CPU backend rounds weights and activations with
 * pp_dtype_round exactly as the GPU stores them (__float2bfloat16_rn,
 * __float2half_rn: to nearest, ties to even), so both backends compute the
 * same values at every precision and the tests compare them closely. */
#ifndef PP_DTYPE_H
#define PP_DTYPE_H

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  PP_DTYPE_F32,
  PP_DTYPE_BF16, /* 8 bits of significand, float32's range */
  PP_DTYPE_F16,  /* 11 bits of significand, largest finite 65504 */
  PP_N_DTYPES,
} pp_dtype;

static inline size_t
pp_dtype_size(pp_dtype t)
{
  return t == PP_DTYPE_F32 ? 4 : 2;
}

static inline const char *
pp_dtype_name(pp_dtype t)
{
  switch (t) {
    case PP_DTYPE_BF16:
      return "bfloat16";
    case PP_DTYPE_F16:
      return "float16";
    default:
      return "float32";
  }
}

/* v with its low `drop` bits rounded off, to nearest: ties to even, or
 * away from zero. Adding half of the dropped part to the bits carries
 * into the exponent when it must (past the largest value, infinity); NaN
 * stays NaN. */
static inline float
pp_round_low_bits(float v, unsigned drop, bool ties_to_even)
{
  uint32_t u;
  memcpy(&u, &v, sizeof u);
  if ((u & 0x7fffffffu) > 0x7f800000u)
    return v;
  const uint32_t half = 1u << (drop - 1), lsb = (u >> drop) & 1u;
  u += ties_to_even ? half - 1u + lsb : half;
  u &= ~((1u << drop) - 1u);
  memcpy(&v, &u, sizeof v);
  return v;
}

/* v rounded to the nearest bfloat16, ties to even (NaN stays NaN). */
static inline float
pp_round_bf16(float v)
{
  return pp_round_low_bits(v, 16, true);
}

/* v rounded to the nearest float16, ties to even: past 65520 infinity,
 * below 2⁻¹⁴ in steps of 2⁻²⁴ (subnormals). Scaling by a power of two
 * is exact, so rintf (to nearest even in the default mode) rounds. */
static inline float
pp_round_f16(float v)
{
  const float a = fabsf(v);
  if (a != a)
    return v;
  if (a >= 65520.0f)
    return copysignf(INFINITY, v);
  float step = 5.9604644775390625e-08f; /* 2⁻²⁴ */
  if (a >= 6.103515625e-05f) {          /* 2⁻¹⁴: normal */
    int e;
    frexpf(a, &e); /* a in [2^(e-1), 2^e): 11 bits of significand */
    step = ldexpf(1.0f, e - 11);
  }
  return copysignf(rintf(a / step) * step, v);
}

/* v rounded to the nearest TF32 (10 stored significand bits, float32's
 * range), ties away from zero, as cvt.rna.tf32.f32 rounds it. TF32 is a
 * way to multiply, not a storage type, so it is no pp_dtype. */
static inline float
pp_round_tf32(float v)
{
  return pp_round_low_bits(v, 13, false);
}

static inline float
pp_dtype_round(pp_dtype t, float v)
{
  return t == PP_DTYPE_BF16 ? pp_round_bf16(v) : t == PP_DTYPE_F16 ? pp_round_f16(v) : v;
}

/* The float a 16-bit value of type t (bf16, else f16) holds, from its
 * bits: exact, with infinities, subnormals and NaN (its payload kept). */
static inline float
pp_dtype_from_bits(pp_dtype t, uint16_t bits)
{
  uint32_t u = (uint32_t) bits << 16;
  if (t != PP_DTYPE_BF16) {
    const uint32_t sign = (uint32_t) (bits & 0x8000u) << 16, e = (bits >> 10) & 31u,
                   f = bits & 1023u;
    if (e == 0) { /* zero or subnormal: f · 2⁻²⁴, exact in float */
      const float mag = ldexpf((float) f, -24);
      return sign ? -mag : mag;
    }
    u = sign | (e == 31 ? 0x7f800000u : (e + 127 - 15) << 23) | f << 13;
  }
  float v;
  memcpy(&v, &u, sizeof v);
  return v;
}

#ifdef __cplusplus
}
#endif

#endif
