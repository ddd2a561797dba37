/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Choosing a plan by timing candidates on the real shapes: each layer's
 * kernels (and cuBLAS's algorithm where cuBLAS runs it), a whole-MLP
 * kernel where one beats the chain, then how frames cross (whole, in
 * chunks, in place), timed as whole frames submit to done. What a given
 * line fixes is kept; the rest is chosen. */
#ifndef PP_CUDA_PLANNER_H
#define PP_CUDA_PLANNER_H

#include "planner_steps.h"

/* The plan: `given`'s parts as they are, the rest chosen. -EINVAL with a
 * message where a given part does not fit these shapes. */
int pp_planner_choose(const pp_planner *p, const pp_cuda_plan *given, pp_cuda_plan *out,
                      char **msg);

#endif
