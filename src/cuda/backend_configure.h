/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The CUDA backend's configure (backend_configure.c), which its table of
 * operations (backend_cuda.c) names. */
#ifndef PP_CUDA_BACKEND_CONFIGURE_H
#define PP_CUDA_BACKEND_CONFIGURE_H

#include "backend_state.h"

/* pp_backend_ops' configure: the weights for `model`, a plan for `layout`
 * (req's cached or forced line, else tuned) and n_slots slots running it. */
int pp_cuda_backend_configure(pp_backend *base, const pp_model *model,
                              const pp_frame_layout *layout, unsigned n_slots,
                              const pp_plan_request *req, char **msg);

/* Frees what configure made: the slots, the plan's executor and lines. */
void pp_cuda_backend_unconfigure(cuda_backend *b);

#endif
