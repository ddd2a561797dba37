/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A CUDA backend's plan as a plain value: everything configure decides for
 * a model, a frame layout and a slot count. The planner returns one, the
 * plan cache stores its line, and the frame pipeline runs it. It prints as
 * one line and parses back from that line (or from any part of it, the
 * rest left for the planner to choose):
 *
 *   kernels=split:2+rowdot frames=whole graphs=on signal=on
 *     completion=consumer gemm0=id71.tile24.stages13
 *
 * kernels  each layer's kernels joined by '+': own, own64 (our GEMM, 128²
 *          or 64² tiles), cublas (cuBLASLt), split:P (a first layer on
 *          tensor cores, W in P exact pieces: TF32, or FP16 for two of a
 *          frame of bytes or YUV), rowdot (a last
 *          layer of few outputs); or one kernel for the whole MLP: fused,
 *          small:R (R rows a block), wide (hidden layers ≤ 512), warp
 *          (hidden layers ≤ 64)
 * frames   whole (copy in, run, copy out), chunks:C (C overlapped pieces),
 *          in-place (kernels read the pinned frame and write the result)
 * graphs   the kernels as a CUDA graph per slot (on) or launched (off)
 * signal   a one-kernel frame read in place says it is done itself (on)
 *          or by an event (off)
 * completion  who waits for frames: consumer or event-thread
 * gemmI, gemmI-chunk  layer I's cuBLASLt algorithm on a whole frame and on
 *          a chunk's rows, as its configuration attributes (id, tile,
 *          stages, splitk, reduction, swizzle, custom, inner, cluster; the
 *          default values left out)
 *
 * No CUDA header here: the line is tested without a GPU. */
#ifndef PP_CUDA_PLAN_H
#define PP_CUDA_PLAN_H

#include <stdbool.h>
#include <stdint.h>

#include "backend.h"

/* The kernels the planner chooses among, as a number: raised with each new
 * one (2: the chain kernel behind fused for 3 to 8 layers; 3: wide; 4:
 * warp; 5: wide in floats; 6: warp in floats; 7 and 8: the wide kernel's
 * first layer on bytes in FP16, exact FP32's and TF32's; 9: split's exact
 * FP32 of bytes and YUV in FP16), so cached plans made without it, whose
 * algorithms were chosen for other types, are made again. */
#define PP_CUDA_KERNELS_VERSION 9

/* How a layer runs on the GPU, or (fused, small) the whole MLP. */
typedef enum {
  PP_PATH_FUSED,  /* one kernel for a two-layer MLP (O = 1, D ≤ 256), H in registers */
  PP_PATH_SMALL,  /* one kernel for a two-layer MLP (O ≤ 32, D ≤ 256), a few rows a block */
  PP_PATH_WIDE,   /* one kernel, 2 to 8 layers ≤ 512 wide, O = 1, H in shared memory */
  PP_PATH_WARP,   /* one kernel at 16 bits, 2 to 8 layers ≤ 64 wide, O = 1, H in registers */
  PP_PATH_OWN,    /* our GEMM, 128×128 tiles, bias and activation in its epilogue */
  PP_PATH_OWN_64, /* the same with 64×64 tiles */
  PP_PATH_CUBLAS, /* cuBLASLt with its bias/ReLU epilogue */
  PP_PATH_SPLIT,  /* a first layer on TF32 or FP16 tensor cores, W in exact pieces */
  PP_PATH_ROWDOT, /* a last layer (after another) with at most 32 outputs, one warp a row */
  PP_N_PATHS,
} pp_cuda_path;

/* What the planner tunes on a path beyond timing it. */
typedef enum {
  PP_TUNE_NOTHING,
  PP_TUNE_GEMM,       /* cuBLAS's algorithms (cublas, split:P) */
  PP_TUNE_SMALL_ROWS, /* rows a block (small:R) */
} pp_path_tuning;

/* The kernel paths as one table, which the plan line, the planner and the
 * benchmark's per-path timing all read: a new kernel is a row here, its
 * fits and run cases in the executor (mlp_exec.c, mlp_run.c) and its
 * file. */
typedef struct {
  const char *name;
  bool whole;      /* one kernel for the whole MLP; else a layer's */
  bool timed;      /* a layer's the planner times against the others (rowdot is
                      taken wherever it fits) */
  unsigned counts; /* the counts the line may give after the name, ":N": bit N set
                      for each (0: none). A whole kernel's name alone leaves it
                      to the planner; a layer's (split) needs one */
  pp_path_tuning tuning;
} pp_cuda_path_info;

const pp_cuda_path_info *pp_cuda_path_info_of(pp_cuda_path path);
/* Whether `path` is tuned through cuBLAS's algorithms (cublas, split). */
bool pp_cuda_path_tunes_gemm(pp_cuda_path path);

/* A cuBLASLt algorithm by its configuration attributes, which rebuild it
 * (cublasLtMatmulAlgoInit and cublasLtMatmulAlgoConfigSetAttribute). */
typedef struct {
  int32_t id;
  uint32_t tile, stages;
  int32_t splitk; /* cuBLAS's own choice is -1 */
  uint32_t reduction, swizzle, custom;
  uint16_t inner, cluster;
} pp_gemm_algo;

typedef struct {
  pp_cuda_path path; /* a layer's: own, own64, cublas, split or rowdot */
  unsigned pieces;   /* split: pieces of W, 1 (TF32) or 2 (exact FP32) */
  bool has_algo, has_chunk_algo;
  pp_gemm_algo algo;       /* cublas, split: on a whole frame */
  pp_gemm_algo chunk_algo; /* on a chunk's rows */
} pp_layer_plan;

typedef enum {
  PP_FRAMES_WHOLE,
  PP_FRAMES_CHUNKS,
  PP_FRAMES_IN_PLACE,
} pp_frames;

/* The parts a line may give; a plan from the planner has them all. */
enum {
  PP_PLAN_KERNELS = 1 << 0,
  PP_PLAN_FRAMES = 1 << 1,
  PP_PLAN_GRAPHS = 1 << 2,
  PP_PLAN_SIGNAL = 1 << 3,
  PP_PLAN_COMPLETION = 1 << 4,
  PP_PLAN_ALL = (1 << 5) - 1,
};

#define PP_MAX_CHUNKS 16

typedef struct {
  unsigned given; /* PP_PLAN_* */
  unsigned n_layers;
  pp_layer_plan layers[PP_MAX_LAYERS];
  pp_cuda_path whole; /* fused, small, wide or warp; PP_N_PATHS: layer by layer */
  unsigned small_rows;
  pp_frames frames;
  unsigned chunks; /* frames=chunks: 2..PP_MAX_CHUNKS */
  bool graphs, signal;
  pp_completion completion; /* consumer or event-thread */
} pp_cuda_plan;

const char *pp_cuda_path_name(pp_cuda_path path);
/* Whether `path` is one kernel for the whole MLP (fused, small, wide, warp). */
bool pp_cuda_path_is_whole(pp_cuda_path path);

/* Whether any layer runs through cuBLASLt (which is then loaded). */
bool pp_cuda_plan_uses_cublas(const pp_cuda_plan *plan);

/* The line, for what `plan->given` holds; g_free it. */
char *pp_cuda_plan_to_line(const pp_cuda_plan *plan);

/* Parses a line (all of it, or some of its parts) into *plan; -EINVAL with
 * a message naming the part at fault. Whether it fits a model is for the
 * backend to say. */
int pp_cuda_plan_parse(const char *line, pp_cuda_plan *plan, char **msg);

#endif
