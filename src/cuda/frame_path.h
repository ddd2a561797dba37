/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* How one frame crosses, as the plan says: whole (an upload, the slot's
 * graph of kernels, a download), in chunks whose copies and kernels
 * overlap on three streams, or read in place (the kernels read the pinned
 * frame and write the pinned result over the bus, no copies). A frame
 * already in device memory (NVDEC's) is gathered into the slot's frame by
 * a kernel instead of uploaded. Nothing here allocates or waits. */
#ifndef PP_CUDA_FRAME_PATH_H
#define PP_CUDA_FRAME_PATH_H

#include "backend.h"
#include "slot.h"

typedef struct {
  const pp_cuda_plan *plan;
  const pp_mlp_exec *exec;
  const pp_frame_layout *layout;          /* what a slot holds: a batch's frames back to back */
  uint32_t o;                             /* results per sample */
  size_t chunk_offset[PP_MAX_CHUNKS + 1]; /* chunk j's first byte; the last: frame_bytes */
  /* Batches: one frame's layout (the layout itself where jobs hold one),
   * how many a slot holds, and whether a batch of fewer runs only their
   * samples (the plan's GEMMs made for those rows too) or all. */
  const pp_frame_layout *one;
  unsigned batch;
  bool partial_rows;
} pp_frame_path;

/* Whether frames of `layout` read by `x` split into `c` chunks of whole
 * sample rows, each a contiguous byte range: one plane, not YUV (whose
 * kernels address pixels, not bytes). */
bool pp_frame_chunks_fit(const pp_frame_layout *layout, const pp_cuda_a *x, unsigned c);
/* Fills p->chunk_offset for the plan's chunk count (frames=chunks). */
void pp_frame_path_set_chunks(pp_frame_path *p, const pp_cuda_a *x);

/* Enqueues a frame on slot `s`: from host memory `src` (pinned), or with
 * `src` NULL from the device planes of `job`; the result to `dst` (pinned
 * host memory). Stage events where s->timed; a one-kernel frame in place
 * raises its done signal with s->signal_seq. */
int pp_frame_enqueue(const pp_frame_path *p, pp_cuda_slot *s, const void *src, const pp_job *job,
                     float *dst, char **msg);
/* Enqueues a batch (job->n_batch frames, each from its host memory or
 * device planes) on slot `s`, whole: each frame uploaded behind the one
 * before, the MLP once over their samples, each result downloaded to its
 * output, or (not pinned) to its place in the slot's staging, which sets
 * s->staged_out. Stage events where s->timed. */
int pp_frame_enqueue_batch(const pp_frame_path *p, pp_cuda_slot *s, const pp_job *job, char **msg);
/* The stream a frame so enqueued ends on, for its completion. */
cudaStream_t pp_frame_last_stream(const pp_frame_path *p, const pp_cuda_slot *s, const void *src);

#endif
