/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What cudamlp's last start with the same settings needed, readied while
 * the pipeline starts. After a decoder's caps its first frame is 5 ms
 * away, and a plan from the cache that runs layers on cuBLASLt still loads
 * it (60-90 ms) and readies its kernels (about 120 ms) there. So: at
 * NULL→READY, while the pipeline's CUDA context is made (100-150 ms),
 * cuBLASLt loads in a thread (it needs no context); at start, the engine
 * configures in a thread for the caps the last start had, with the plan
 * the cache holds for them; caps that are the same then find it done. The
 * plan cache keeps what a start needed as a start hint (plan_cache.h):
 * "cublaslt" or "nothing", and the caps where they were frames in CUDA
 * memory (which run without CUDA graphs, so upstream's own CUDA work
 * cannot break a capture meanwhile). */
#ifndef GST_CUDA_MLP_PRELOAD_H
#define GST_CUDA_MLP_PRELOAD_H

#include "gstcudamlp.h"

/* The plan settings cudamlp configures with: its properties, with graphs
 * off for frames in CUDA memory. */
typedef struct {
  pp_plan_settings plan;
  gchar *forced, *text;
} GstCudaMlpPlanSettings;
void gst_cuda_mlp_plan_settings(GstCudaMlp *self, gboolean cuda_memory,
                                GstCudaMlpPlanSettings *out);
void gst_cuda_mlp_plan_settings_clear(GstCudaMlpPlanSettings *s);

/* At NULL→READY: reads the hint and starts loading what it names. */
void gst_cuda_mlp_preload_start(GstCudaMlp *self);
/* At the end of start: configures the engine, in a thread, for the caps
 * the hint remembers, where the cache holds their plan. */
void gst_cuda_mlp_preload_configure(GstCudaMlp *self);
/* Waits for anything under way (at start: the library; at the caps,
 * before their frames are drained: the configure). */
void gst_cuda_mlp_preload_wait(GstCudaMlp *self);
/* At set_caps: waits; TRUE where the engine was configured for these very
 * caps (*outcome then that configure's, to clear). Either way what was
 * readied is then spent. */
gboolean gst_cuda_mlp_preload_took(GstCudaMlp *self, GstCaps *caps, pp_plan_outcome *outcome);
/* Waits, and forgets a configure readied (at stop, a flush, READY→NULL). */
void gst_cuda_mlp_preload_drop(GstCudaMlp *self);
/* After a configure for `caps`: keeps what this start needed for the
 * next. */
void gst_cuda_mlp_preload_note(GstCudaMlp *self, GstCaps *caps, const pp_plan_info *info);
/* At finalize. */
void gst_cuda_mlp_preload_clear(GstCudaMlp *self);

#endif
