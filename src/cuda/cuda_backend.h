/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The CUDA backend (backend_cuda.c), as module.c puts it in the module's
 * table, and its parts as the benchmark's timings read them. */
#ifndef PP_CUDA_CUDA_BACKEND_H
#define PP_CUDA_CUDA_BACKEND_H

#include "backend.h"
#include "device.h"
#include "slot.h"

typedef struct cuda_backend cuda_backend;

int cuda_backend_new(const pp_backend_options *opts, pp_backend **out, char **msg);

/* What a configured backend runs, for bench_timing.c. */
typedef struct {
  const pp_cuda_device *device;
  const pp_gpu_weights *weights;
  pp_mlp_exec *exec;
  const pp_cuda_plan *plan;
  const pp_frame_layout *layout;
  pp_cuda_slot *slot; /* slot 0 */
  unsigned n_slots;
} pp_cuda_parts;

/* False until configured. */
bool cuda_backend_parts(pp_backend *b, pp_cuda_parts *parts);

#endif
