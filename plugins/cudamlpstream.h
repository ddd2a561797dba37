/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* cudamlp's frames through the engine: the sink pad's chain and the
 * source pad's task (cudamlpstream.c). */
#ifndef GST_CUDA_MLP_STREAM_H
#define GST_CUDA_MLP_STREAM_H

#include "gstcudamlp.h"

/* The sink pad's chain function: a frame queued on the engine. */
GstFlowReturn gst_cuda_mlp_chain(GstPad *pad, GstObject *parent, GstBuffer *buffer);

/* Starts the source pad's task, which pushes each result and event in
 * order. */
gboolean gst_cuda_mlp_start_pushing(GstCudaMlp *self);

/* What the engine calls for each frame and event a flush throws away. */
void gst_cuda_mlp_discard_item(void *owner, const pp_item *item);

#endif
