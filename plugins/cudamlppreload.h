/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What cudamlp's last start with the same settings loaded for its plan,
 * loaded again while the pipeline starts. A plan from the cache that runs
 * layers on cuBLASLt still loads it when the caps come (60-90 ms), and
 * after a decoder's caps its first frame is 5 ms away; at NULL→READY the
 * pipeline's CUDA context takes 100-150 ms to make, and cuBLASLt needs no
 * context to load. The plan cache keeps what a start needed as a start
 * hint (plan_cache.h). */
#ifndef GST_CUDA_MLP_PRELOAD_H
#define GST_CUDA_MLP_PRELOAD_H

#include "gstcudamlp.h"

/* At NULL→READY: starts loading, in a thread, what the hint names. */
void gst_cuda_mlp_preload_start(GstCudaMlp *self);
/* Waits for the loading, if any (at start, and at READY→NULL). */
void gst_cuda_mlp_preload_finish(GstCudaMlp *self);
/* After a configure: keeps what this start needed for the next. */
void gst_cuda_mlp_preload_note(GstCudaMlp *self, const pp_plan_info *info);

#endif
