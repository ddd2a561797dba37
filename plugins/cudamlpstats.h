/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* cudamlp's stats: the property's structure, and the element message
 * posted with it at EOS (gst-launch-1.0 -m prints it). */
#ifndef GST_CUDA_MLP_STATS_H
#define GST_CUDA_MLP_STATS_H

#include "gstcudamlp.h"

/* The stats now, or what stop saw once stopped. */
GstStructure *gst_cuda_mlp_build_stats(GstCudaMlp *self);
/* Keeps the figures readable once stopped; call before the engine goes. */
void gst_cuda_mlp_keep_stats(GstCudaMlp *self);
void gst_cuda_mlp_post_stats(GstCudaMlp *self);

#endif
