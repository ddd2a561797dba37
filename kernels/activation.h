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

PP_HOST_DEVICE float
pp_act_apply(pp_act act, float x)
{
  switch (act.kind) {
    case PP_ACT_RELU:
      return x > 0.0f ? x : 0.0f;
    case PP_ACT_LEAKY_RELU:
      return x >= 0.0f ? x : act.slope * x;
    case PP_ACT_GELU:
      return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
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
