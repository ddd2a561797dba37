// SPDX-License-Identifier: LGPL-2.1-or-later
/* The element-wise activations a layer may end with, PyTorch's definitions,
 * one function for the CPU and the GPU so both backends compute the same
 * thing. On the GPU the kind is the same for every thread of a launch, so
 * the switch is a uniform branch in the epilogue, not divergence; one
 * runtime switch keeps the kernels to one instantiation per tile instead
 * of one per tile and activation. */
#ifndef PP_ACTIVATION_H
#define PP_ACTIVATION_H

#include <math.h>

#ifdef __CUDACC__
#define PP_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define PP_HOST_DEVICE static inline
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  PP_ACT_IDENTITY,   /* nn.Identity, or nothing */
  PP_ACT_RELU,       /* nn.ReLU */
  PP_ACT_LEAKY_RELU, /* nn.LeakyReLU(negative_slope) */
  PP_ACT_GELU,       /* nn.GELU(): x·Φ(x), with erf */
  PP_ACT_GELU_TANH,  /* nn.GELU(approximate='tanh') */
  PP_ACT_SILU,       /* nn.SiLU: x·σ(x) */
  PP_ACT_SIGMOID,    /* nn.Sigmoid */
  PP_ACT_TANH,       /* nn.Tanh */
  PP_N_ACTS,
} pp_act_kind;

typedef struct {
  pp_act_kind kind;
  float slope; /* LeakyReLU's negative_slope; unused otherwise */
} pp_act;

#define PP_ACT(kind_) ((pp_act){ .kind = (kind_), .slope = 0.0f })

/* nn.GELU(), x·Φ(x) with Φ the normal distribution function, from one
 * exp2 and no branch: Φ(−u) = 2^−q(u) for u = |x|, q a polynomial of
 * degree 12 fitted to −log2 Φ(−u) on [0, 6] (least squares on Chebyshev
 * nodes, coefficients rounded to float), by Horner's rule in fused
 * multiply-adds; past 6, where Φ(−u) < 1e-9, 0. Against x·Φ(x) in
 * double, over every float in [−8, 8] on the host: within 1.9e-7
 * relative for x ≥ 0, within 4e-8 absolute for x < 0 (and 9e-7 relative
 * down to −3, where 0.5·x·(1 + erff) loses all but a few bits to the
 * sum); tests/unit/test_cpu_kernels.c checks it. erff's two polynomials,
 * one with an expf, both ran on the GPU wherever a warp's values lay on
 * both sides of their split, and took a fifth of deep's MLP in TF32. */
PP_HOST_DEVICE float
pp_gelu(float x)
{
  const float u = fminf(fabsf(x), 6.0f); /* NaN: 6, and x·0 keeps the NaN */
  float q = 2.452101022e-10f;
  q = fmaf(q, u, -1.083459100e-08f);
  q = fmaf(q, u, 2.170515359e-07f);
  q = fmaf(q, u, -2.600524795e-06f);
  q = fmaf(q, u, 2.055455479e-05f);
  q = fmaf(q, u, -1.092113816e-04f);
  q = fmaf(q, u, 3.494504490e-04f);
  q = fmaf(q, u, -9.039799625e-05f);
  q = fmaf(q, u, -6.879879627e-03f);
  q = fmaf(q, u, 5.241608992e-02f);
  q = fmaf(q, u, 4.592244029e-01f);
  q = fmaf(q, u, 1.151104212e+00f);
  q = fmaf(q, u, 1.000000000e+00f);
  /* Φ(−|x|). A multiply, not a choice of exp2 or 0: nvcc turns that
   * choice into a branch around the polynomial, and a branch a value
   * keeps a warp's values from overlapping (deep's MLP 198 µs, not 169).
   * On the GPU the exp2 is the hardware's (2 ulp), without exp2f's care
   * for results below 2^-126, which this one's never are. */
#ifdef __CUDA_ARCH__
  float two_q;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(two_q) : "f"(-q));
#else
  const float two_q = exp2f(-q);
#endif
  const float tail = two_q * (u < 6.0f ? 1.0f : 0.0f);
  return x >= 0.0f ? x * (1.0f - tail) : x * tail;
}

PP_HOST_DEVICE float
pp_act_apply(pp_act act, float x)
{
  switch (act.kind) {
    case PP_ACT_RELU:
      return x > 0.0f ? x : 0.0f;
    case PP_ACT_LEAKY_RELU:
      return x >= 0.0f ? x : act.slope * x;
    case PP_ACT_GELU:
      return pp_gelu(x);
    case PP_ACT_GELU_TANH: {
      const float inner = 0.79788456080286536f * (x + 0.044715f * x * x * x);
      return 0.5f * x * (1.0f + tanhf(inner));
    }
    case PP_ACT_SILU:
      return x / (1.0f + expf(-x));
    case PP_ACT_SIGMOID:
      return 1.0f / (1.0f + expf(-x));
    case PP_ACT_TANH:
      return tanhf(x);
    default:
      return x;
  }
}

#ifdef __cplusplus
}
#endif

#endif
