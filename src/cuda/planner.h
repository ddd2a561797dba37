/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Choosing a plan by timing candidates on the real shapes: each layer's
 * kernels (and cuBLAS's algorithm where cuBLAS runs it), a whole-MLP
 * kernel where one beats the chain, then how frames cross (whole, in
 * chunks, in place), timed as whole frames submit to done. What a given
 * line fixes is kept; the rest is chosen. */
#ifndef PP_CUDA_PLANNER_H
#define PP_CUDA_PLANNER_H

#include "slot.h"

typedef struct {
  pp_mlp_exec *exec;
  const pp_gpu_weights *weights;
  const pp_frame_layout *layout;
  /* Slot 0, holding a frame of random bytes (timing never runs on zeros);
   * its graphs are the planner's to capture while it chooses. */
  pp_cuda_slot *slot;
  unsigned n_slots;
  bool host_pointers; /* frames may be read in place */
  bool quick;         /* each choice timed once, cuBLAS's first algorithm taken */
  unsigned pieces;    /* the split path's pieces: 2 (fp32) or 1 (tf32) */
  pp_completion completion;
} pp_planner;

/* The plan: `given`'s parts as they are, the rest chosen. -EINVAL with a
 * message where a given part does not fit these shapes. */
int pp_planner_choose(const pp_planner *p, const pp_cuda_plan *given, pp_cuda_plan *out,
                      char **msg);

#endif
