/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* cudamlp's pads and the streaming through them (cudamlpstream.c). */
#ifndef GST_CUDA_MLP_STREAM_H
#define GST_CUDA_MLP_STREAM_H

#include "gstcudamlp.h"

/* Makes the two pads from the element's templates, with their functions. */
void gst_cuda_mlp_init_pads(GstCudaMlp *self, GstPadTemplate *sink, GstPadTemplate *src);

/* What the engine calls for each frame and event a flush throws away. */
void gst_cuda_mlp_discard_item(void *owner, const pp_item *item);

#endif
