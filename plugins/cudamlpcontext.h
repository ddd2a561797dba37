/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The CUDA context cudamlp shares with the pipeline (GstContext), so that
 * frames NVDEC or cudaupload leave in device memory are read where they
 * lie: found or made in NULL→READY, given by the application or a
 * neighbour at any time, answered to CONTEXT queries on both pads. */
#ifndef GST_CUDA_MLP_CONTEXT_H
#define GST_CUDA_MLP_CONTEXT_H

#include "gstcudamlp.h"

/* NULL→READY: a neighbour's context, else the application's, else the
 * device's primary one, announced. None with backend=cpu or a device list. */
void gst_cuda_mlp_context_ensure(GstCudaMlp *self);
/* READY→NULL. */
void gst_cuda_mlp_context_drop(GstCudaMlp *self);
/* GstElement::set_context. */
void gst_cuda_mlp_context_set(GstCudaMlp *self, GstContext *context);
/* The CONTEXT query. */
gboolean gst_cuda_mlp_context_query(GstCudaMlp *self, GstQuery *query);

/* The context, referenced for use outside the object lock, or NULL. */
GstObject *gst_cuda_mlp_context_ref(GstCudaMlp *self);
/* Whether frames in CUDA memory can be read: a context and the GPU
 * backend. Before READY nothing is known yet: yes if this build and the
 * backend setting allow it. */
gboolean gst_cuda_mlp_takes_cuda_memory(GstCudaMlp *self);

#endif
