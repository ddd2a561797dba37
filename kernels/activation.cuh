// SPDX-License-Identifier: LGPL-2.1-or-later
/* Activations as a kernel's template parameter: identity and ReLU (the
 * common cases, and the seed's) compile to nothing or one max, so the
 * tiled kernels keep their registers; every other kind goes through
 * pp_act_apply's switch. Compiled into every launch, that switch's
 * erff/expf/tanhf code makes the 128×128 GEMM spill registers and slows
 * the common cases by a quarter. */
#ifndef PP_ACTIVATION_CUH
#define PP_ACTIVATION_CUH

#include <type_traits>

#include "activation.h"

namespace pp
{

/* The template codes: a kind, or ACT_ANY for "look at pp_act at run time". */
constexpr int ACT_ANY = PP_N_ACTS;

template <int A>
__device__ __forceinline__ float
activate(pp_act act, float x)
{
  if constexpr (A == PP_ACT_IDENTITY)
    return x;
  else if constexpr (A == PP_ACT_RELU)
    return fmaxf(x, 0.f);
  else
    return pp_act_apply(act, x);
}

/* f(std::integral_constant<int, A>()) with A the kind, where the kind is
 * one of the common ones in a fused kernel's epilogue, else ACT_ANY: the
 * one switch from a layer's activation, read once a layer, to code of its
 * own, rather than pp_act_apply's switch a value at a time. */
template <typename F>
__device__ __forceinline__ void
with_act(pp_act_kind kind, F &&f)
{
  switch (kind) {
    case PP_ACT_IDENTITY:
      return f(std::integral_constant<int, PP_ACT_IDENTITY>());
    case PP_ACT_RELU:
      return f(std::integral_constant<int, PP_ACT_RELU>());
    case PP_ACT_GELU:
      return f(std::integral_constant<int, PP_ACT_GELU>());
    case PP_ACT_SILU:
      return f(std::integral_constant<int, PP_ACT_SILU>());
    default:
      return f(std::integral_constant<int, ACT_ANY>());
  }
}

/* The template code for `act`. */
inline int
act_code(pp_act act)
{
  return act.kind == PP_ACT_IDENTITY || act.kind == PP_ACT_RELU ? (int) act.kind : ACT_ANY;
}

} // namespace pp

#endif
