/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The MLP executor: a model's weights on the device and the kernels of
 * each layer for a plan, enqueued on any stream for any buffers. It knows
 * nothing of slots, frames in flight or the backend: the frame pipeline
 * (slot.c, frame_path.c) gives it buffers and a stream, the planner asks it
 * to run candidates. Per frame layout it holds the frame reader's offset
 * table, the split weights of a first layer on tensor cores, and the
 * cuBLASLt GEMMs of the plan's cuBLAS layers. */
#ifndef PP_CUDA_MLP_EXEC_H
#define PP_CUDA_MLP_EXEC_H

#include <cuda_runtime_api.h>
#include <stdbool.h>

#include "cuda_kernels.h"
#include "cuda_plan.h"
#include "weights.h"

/* One stream's buffers: a slot's. */
typedef struct {
  pp_cuda_a x;     /* reads the slot's copy of the frame */
  void *d_x;       /* the frame converted: the precision's type (cublas) or TF32 pieces (split) */
  void *d_h[2];    /* hidden activations in the precision's type, taking turns layer by layer */
  float *d_out;    /* N × O */
  void *workspace; /* cuBLASLt's; NULL when no layer runs on cuBLAS */
  /* The done signal a one-kernel frame raises (cuda_kernels.h). */
  unsigned *d_done_count;
  volatile unsigned *d_done_flag;
} pp_mlp_buffers;

/* What one enqueue covers: samples [row0, row0 + n) of the frame in the
 * buffers, or (frame set) the frame where it lies, its results to `out`
 * (in place); a one-kernel MLP raises the done signal with `signal` (0:
 * none). */
typedef struct {
  uint32_t row0, n;
  const void *frame;
  float *out;
  unsigned signal;
} pp_mlp_rows;

typedef struct pp_mlp_exec pp_mlp_exec;

/* `precision`: tf32 runs cuBLAS's layers and the chain kernel on TF32
 * tensor cores; bf16 and fp16 keep the activations between layers in that
 * type (w rounded to it: pp_gpu_weights_upload), which cuBLAS's layers and
 * the row-dot kernel read. */
int pp_mlp_exec_new(const pp_gpu_weights *w, const pp_frame_layout *layout, pp_precision precision,
                    cudaStream_t setup, pp_mlp_exec **out, char **msg);
void pp_mlp_exec_free(pp_mlp_exec *e);

/* A reader of this layout's frames at `frame` (device memory, or pinned
 * host memory the device can address). */
pp_cuda_a pp_mlp_exec_reader(const pp_mlp_exec *e, const void *frame);
/* Bytes of d_x a buffer set needs for `plan` (its first layer converting
 * X for cuBLAS, or into split's pieces), or for any plan (NULL: what the
 * planner's candidates may need). */
size_t pp_mlp_exec_scratch_bytes(const pp_mlp_exec *e, const pp_cuda_plan *plan);
/* Bytes of each d_h. */
size_t pp_mlp_exec_hidden_bytes(const pp_mlp_exec *e);

/* Whether `path` can run layer `layer` (a whole-MLP path: the model), on
 * shape alone; cuBLAS also needs its GEMMs planned. */
bool pp_mlp_exec_fits(const pp_mlp_exec *e, pp_cuda_path path, unsigned layer);

/* cuBLASLt, loaded the first time it is needed; *load_ms (may be NULL)
 * what that took. */
int pp_mlp_exec_use_cublas(pp_mlp_exec *e, double *load_ms, char **msg);
/* cuBLAS's candidate algorithms for layer `layer` on `path` (cublas, or
 * split with `pieces`) over `rows` samples. */
int pp_mlp_exec_gemm_candidates(pp_mlp_exec *e, unsigned layer, pp_cuda_path path, unsigned pieces,
                                uint32_t rows, pp_gemm_algo *algos, int max, int *found,
                                char **msg);
/* Layer `layer`'s GEMM on `path` over `rows` samples (the frame's, or a
 * chunk's) with `algo`, made once for every plan that names it. The
 * executor runs a plan's layers on the GEMMs the plan names and no others:
 * a plan is a value, and candidates timed beside it change nothing. */
int pp_mlp_exec_make_gemm(pp_mlp_exec *e, unsigned layer, pp_cuda_path path, unsigned pieces,
                          uint32_t rows, const pp_gemm_algo *algo, char **msg);
/* Everything `plan` runs, from its algorithms: split weights and GEMMs for
 * whole frames and, with chunks, for a chunk's rows. Fails (for the caller
 * to tune instead) where an algorithm is missing or no longer valid. */
int pp_mlp_exec_prepare(pp_mlp_exec *e, const pp_cuda_plan *plan, char **msg);
/* For a layout of `frames` frames back to back (batches): `plan`'s GEMMs
 * made for the samples of 1 .. frames - 1 of them too, with the plan's
 * algorithms, so a batch of fewer runs only theirs. Fails where cuBLAS
 * takes an algorithm for the whole batch but not for fewer rows. */
int pp_mlp_exec_prepare_batches(pp_mlp_exec *e, const pp_cuda_plan *plan, unsigned frames,
                                char **msg);
/* What other plans made (candidates timed) freed: `plan`'s GEMMs and split
 * weights kept. */
void pp_mlp_exec_keep_only(pp_mlp_exec *e, const pp_cuda_plan *plan);

/* Enqueues the MLP of `rows` on `stream`. */
int pp_mlp_exec_run(const pp_mlp_exec *e, const pp_cuda_plan *plan, const pp_mlp_buffers *b,
                    const pp_mlp_rows *rows, cudaStream_t stream, char **msg);
/* Layer `layer` alone on the frame's first `rows` samples in the buffers
 * (its input where the layer before left it), as `plan` runs it. */
int pp_mlp_exec_run_layer(const pp_mlp_exec *e, const pp_cuda_plan *plan, const pp_mlp_buffers *b,
                          unsigned layer, uint32_t rows, cudaStream_t stream, char **msg);

/* A frame read in place layer by layer runs in three parts: the frame's
 * reader (a conversion, or layer 0), what lies between (a graph of the
 * slot's), the last layer into the result. has_between: whether there is
 * a middle part; run_between enqueues it (what the slot captures). */
bool pp_mlp_exec_has_between(const pp_mlp_exec *e, const pp_cuda_plan *plan);
int pp_mlp_exec_run_between(const pp_mlp_exec *e, const pp_cuda_plan *plan, const pp_mlp_buffers *b,
                            cudaStream_t stream, char **msg);
/* A frame read in place: the whole MLP, the middle part from `between`
 * (NULL: launched directly). */
int pp_mlp_exec_run_in_place(const pp_mlp_exec *e, const pp_cuda_plan *plan,
                             const pp_mlp_buffers *b, const pp_mlp_rows *rows,
                             cudaGraphExec_t between, cudaStream_t stream, char **msg);

/* Whether a frame's one kernel can raise its own done signal. */
bool pp_mlp_exec_can_signal(const pp_cuda_plan *plan);

#endif
