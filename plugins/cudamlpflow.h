/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The stream's state that cudamlp's chain, source task and events share
 * (cudamlpflow.c). */
#ifndef GST_CUDA_MLP_FLOW_H
#define GST_CUDA_MLP_FLOW_H

#include "gstcudamlp.h"

/* What the chain answers upstream with now. */
GstFlowReturn gst_cuda_mlp_get_srcresult(GstCudaMlp *self);
/* The same set, and a drain waiting on it woken. */
void gst_cuda_mlp_set_srcresult(GstCudaMlp *self, GstFlowReturn flow);

/* The stream stops for good: the chain returns `flow` upstream from now
 * on, a chain waiting for a slot is released, and the source task pushes
 * nothing more (the caller has posted the error). */
void gst_cuda_mlp_stop_stream(GstCudaMlp *self, GstFlowReturn flow);

/* Waits until every frame queued so far has left (pushed, or dropped
 * after downstream's EOS). False when the stream stopped or began flushing
 * first. */
gboolean gst_cuda_mlp_drain_pushed(GstCudaMlp *self);
/* Where `event`, reached by the source task, is a drain's marker: counted,
 * the drain woken, the event taken, TRUE. Else FALSE. */
gboolean gst_cuda_mlp_drain_reached(GstCudaMlp *self, GstEvent *event);

#endif
