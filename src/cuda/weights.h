/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A model's weights on the device, uploaded once per model and shared by
 * every slot: as nn.Linear stores them (cuBLAS, the row-dot kernel) and
 * transposed and padded (our GEMMs), biases zero-padded. At a 16-bit
 * precision the floats hold the weights rounded to it, and w16, b16 the
 * same values in that type (cuBLAS's GEMMs read them). */
#ifndef PP_CUDA_WEIGHTS_H
#define PP_CUDA_WEIGHTS_H

#include <cuda_runtime_api.h>

#include "dtype.h"
#include "model.h"

typedef struct {
  uint32_t in, out, ldw; /* ldw = pad4(out) */
  float *w;              /* out × in */
  float *wt;             /* in × ldw, zero past out */
  float *b;              /* ldw; NULL without bias */
  void *w16, *b16;       /* out × in and out of `dtype`; NULL at float32 */
  pp_act act;
} pp_gpu_layer;

typedef struct {
  uint64_t model_id; /* 0: none */
  pp_dtype dtype;    /* what the weights are rounded to */
  unsigned n_layers;
  pp_gpu_layer layers[PP_MAX_LAYERS];
  uint32_t o;   /* the last layer's outputs */
  uint32_t ldh; /* pad4 of the widest hidden layer */
} pp_gpu_weights;

/* Uploads `m` rounded to `dtype` on `stream` (and waits: the host copies
 * are freed after). */
int pp_gpu_weights_upload(pp_gpu_weights *w, const pp_model *m, pp_dtype dtype, cudaStream_t stream,
                          char **msg);
void pp_gpu_weights_free(pp_gpu_weights *w);

#endif
