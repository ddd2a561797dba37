/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* cudamlp's pads, their events and queries (cudamlppads.c). */
#ifndef GST_CUDA_MLP_PADS_H
#define GST_CUDA_MLP_PADS_H

#include "gstcudamlp.h"

/* Makes the two pads from the element's templates, with their functions. */
void gst_cuda_mlp_init_pads(GstCudaMlp *self, GstPadTemplate *sink, GstPadTemplate *src);

#endif
