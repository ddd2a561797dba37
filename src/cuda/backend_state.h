/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The CUDA backend's state, shared by its per-frame operations
 * (backend_cuda.c) and its configuration (backend_configure.c). */
#ifndef PP_CUDA_BACKEND_STATE_H
#define PP_CUDA_BACKEND_STATE_H

#include "completion.h"
#include "cuda_backend.h"
#include "frame_path.h"
#include "gpu_timer.h"
#include "planner.h"

struct cuda_backend {
  pp_backend base;
  pp_backend_ops ops;
  pp_cuda_device device;
  pp_precision precision;
  pp_completion completion;
  bool time_every_frame;
  pp_cuda_completion *waiter;
  pp_gpu_weights weights;
  char key[384];

  /* From configure. */
  pp_frame_layout one;    /* a frame's layout */
  pp_frame_layout layout; /* a slot's: `batch` frames back to back */
  unsigned batch;
  bool partial_rows; /* a batch of fewer frames runs only their samples */
  pp_mlp_exec *exec;
  pp_cuda_plan plan;
  pp_frame_path path;
  unsigned n_slots;
  pp_cuda_slot slots[PP_MAX_SLOTS];
  pp_gpu_anchor anchor; /* set when every frame is timed (traces) */
  char *plan_line, *plan_refused, *detail;
  pp_plan_source plan_source;
  pp_startup_times startup;
};

#endif
