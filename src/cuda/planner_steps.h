/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What the planner works on, and its steps (planner.c runs them in
 * order): the kernels (planner_kernels.c), then how frames cross
 * (planner_frames.c). */
#ifndef PP_CUDA_PLANNER_STEPS_H
#define PP_CUDA_PLANNER_STEPS_H

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

/* Runs of one timing: `full`, or one when quick. */
unsigned pp_planner_reps(const pp_planner *p, unsigned full);
/* The MLP alone as `plan` runs it, µs on the device: on the whole frame,
 * or on its first `rows` samples (a chunk's). */
int pp_planner_time_mlp(const pp_planner *p, const pp_cuda_plan *plan, double *us, char **msg);
int pp_planner_time_mlp_rows(const pp_planner *p, const pp_cuda_plan *plan, uint32_t rows,
                             double *us, char **msg);
/* Layer `layer` on `rows` samples with the path `plan` gives it (cublas or
 * split): cuBLAS's candidates timed, the fastest set in the executor and
 * written to the plan (algo, or chunk_algo when rows are a chunk's). */
int pp_planner_tune_gemm(const pp_planner *p, pp_cuda_plan *plan, unsigned layer, uint32_t rows,
                         double *us, char **msg);
/* mlp_small's rows per block, the fastest of the path's choices (few rows
 * a block fill more SMs; more rows read W0 fewer times) into the plan;
 * *us its time. */
int pp_planner_tune_small(const pp_planner *p, pp_cuda_plan *plan, double *us, char **msg);
/* Every layer's kernels, or a whole-MLP kernel; *whole_alt: a whole-MLP
 * kernel that lost on the MLP alone and may still win a frame
 * (PP_N_PATHS: none). */
int pp_planner_kernels(const pp_planner *p, pp_cuda_plan *plan, pp_cuda_path *whole_alt,
                       char **msg);
/* How frames cross, and the chunk algorithms that needs. */
int pp_planner_frames(const pp_planner *p, pp_cuda_plan *plan, pp_cuda_path whole_alt, char **msg);

#endif
