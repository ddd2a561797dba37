/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* One slot: what a frame in flight uses on the GPU. Its own non-blocking
 * stream (with two more for a frame in chunks), events, pinned staging for
 * a frame and its result, device buffers for the executor, the done
 * signal's words, and the plan's kernels captured as CUDA graphs. Made at
 * configure, freed at the next; nothing here is allocated per frame. */
#ifndef PP_CUDA_SLOT_H
#define PP_CUDA_SLOT_H

#include <cuda_runtime_api.h>
#include <stdbool.h>
#include <stdint.h>

#include "mlp_exec.h"

typedef struct {
  unsigned index;
  /* A frame crosses on `stream`; in chunks, `compute` runs the kernels and
   * `copy_out` brings the results back, ordered by ev_in / ev_out. */
  cudaStream_t stream, compute, copy_out;
  cudaEvent_t ev_in[PP_MAX_CHUNKS], ev_out[PP_MAX_CHUNKS];
  cudaEvent_t ev_start, ev_h2d, ev_mlp, ev_d2h; /* stage times of a timed frame */
  cudaEvent_t ev_done;                          /* the frame's completion */
  void *staging_in;                             /* pinned, one frame: frames from unpinned memory */
  float *staging_out;                           /* pinned, one result: outputs to unpinned memory */
  void *d_in;                                   /* the frame on the device */
  pp_mlp_buffers buf;
  size_t scratch_bytes;         /* buf.d_x's */
  volatile unsigned *done_flag; /* the done signal as the host reads it */
  size_t frame_bytes, out_bytes;
  /* The plan's kernels: whole frame, the middle of a frame read in place,
   * each chunk. NULL: launched directly. */
  cudaGraphExec_t exec, between, chunk[PP_MAX_CHUNKS];

  /* The frame in flight. */
  unsigned signal_seq; /* what its kernel writes to done_flag; 0: by its event */
  unsigned last_seq;
  bool staged_out;       /* its result waits in staging_out for finish */
  unsigned batch_frames; /* frames of the batch in flight (0: one frame) */
  bool timed;            /* its stage events are recorded */
  uint64_t frames;
} pp_cuda_slot;

/* Streams, events, staging and buffers for frames of `layout` with
 * `out_bytes` of results, run by `e` on any plan's kernels; `workspace`:
 * room for cuBLASLt. */
int pp_cuda_slot_alloc(pp_cuda_slot *s, unsigned index, const pp_mlp_exec *e,
                       const pp_gpu_weights *w, const pp_frame_layout *layout, size_t out_bytes,
                       bool workspace, char **msg);
/* buf.d_x at `bytes` (0: none), what a plan's kernels need of it: a frame
 * converted for cuBLAS or split into TF32 pieces needs up to three floats
 * an input, most plans none. */
int pp_cuda_slot_fit_scratch(pp_cuda_slot *s, size_t bytes, char **msg);
/* cuBLASLt's workspace where `want` (a plan runs a layer on cuBLAS),
 * freed where not: 32 MiB a slot that most small models' plans never
 * touch once tuning is done. */
int pp_cuda_slot_fit_workspace(pp_cuda_slot *s, bool want, char **msg);
void pp_cuda_slot_free(pp_cuda_slot *s);

/* The slot's graphs for `plan` (over frames of `n` samples), replacing any
 * it had; none with graphs=off. A capture the driver refuses leaves the
 * slot on direct launches, which do the same work, and says why in *why. */
int pp_cuda_slot_capture(pp_cuda_slot *s, const pp_mlp_exec *e, const pp_cuda_plan *plan,
                         uint32_t n, char **why);
void pp_cuda_slot_drop_graphs(pp_cuda_slot *s);

/* Waits for everything queued on the slot's streams. */
void pp_cuda_slot_sync(pp_cuda_slot *s);

#endif
