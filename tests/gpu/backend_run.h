/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What the CUDA backend's GPU tests share: a set of shapes (frame layout
 * and model), and a run of FRAMES frames of one shape through the engine
 * on the CUDA backend, checked against the float64 reference. */
#ifndef PP_BACKEND_RUN_H
#define PP_BACKEND_RUN_H

#include <stdbool.h>
#include <stdint.h>

#include "backend.h"
#include "engine.h"
#include "frame.h"
#include "model.h"

extern uint64_t seed;
/* PP_GPU_QUICK (compute-sanitizer runs): fewer cases where each is slow. */
extern bool quick;

typedef struct {
  const char *name;
  pp_layout_kind kind;
  pp_pixel_format format;
  uint32_t width, height, patch; /* video; tensors: width = K, height = N */
  uint32_t d, o;
  pp_hidden_activation act;
  /* More than the seed's two layers: widths after K (the last is O), and
   * the activation after each. */
  unsigned n_layers;
  uint32_t widths[4];
  pp_act_kind acts[4];
} shape;

extern const shape shapes[];
extern const size_t n_shapes;

#define FRAMES 9

typedef struct {
  const shape *s;
  pp_frame_layout layout;
  pp_model *model;
  pp_backend *backend; /* the engine's */
  pp_engine *engine;
  void *frames[FRAMES];
  float *outputs[FRAMES];
  bool pinned;
} run;

/* The plan line that runs every layer of `m` on `path` (own, own64,
 * cublas, split; fused or small for the whole MLP): rowdot kept for a last
 * layer of few outputs, cublas after a split first layer. g_free it. */
char *kernels_line(const pp_model *m, const char *path);

/* The engine on the CUDA backend, its plan forced to kernels=`path` ("":
 * tuned) plus `extra` (more of a plan line, or NULL), random frames
 * (pinned or not) and poisoned outputs. */
void setup_run(run *r, const shape *s, const char *path, const char *extra,
               pp_completion completion, bool pinned, unsigned slots);
/* Frame i in, and the next frame out, which must be frame `expect`. */
void submit(run *r, int i);
void pop(run *r, int expect);
/* Every frame's outputs against the float64 reference; at a 16-bit
 * precision also against the CPU backend's at that precision. */
void check_outputs(run *r, const char *what);
void teardown_run(run *r);

/* The request's no_graphs in setup_run (false unless set). */
extern bool no_graphs;

/* The precision setup_run opens the backend with (fp32 unless set). */
extern pp_precision precision;

/* When set, what the backend's description must say (e.g. "frames=chunks:3"). */
extern const char *expect_detail;
/* All FRAMES frames through `slots` slots, then the checks. */
void run_all(const shape *s, const char *path, const char *extra, pp_completion completion,
             bool pinned, unsigned slots);

#endif
