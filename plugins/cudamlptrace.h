/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* cudamlp's Chrome trace (src/engine/trace.h): where it goes (trace-file, else
 * PINGPONG_TRACE), how many spans it keeps, and writing it at stop. */
#ifndef GST_CUDA_MLP_TRACE_H
#define GST_CUDA_MLP_TRACE_H

#include "gstcudamlp.h"

/* The trace's path, "{name}" made the element's name; NULL when tracing is
 * off. Free with g_free. */
gchar *gst_cuda_mlp_trace_path(GstCudaMlp *self);
/* Starts tracing the element's engine to `path` (NULL: none). */
void gst_cuda_mlp_open_trace(GstCudaMlp *self, const gchar *path);
/* Writes and frees the element's trace, if any; a warning if it cannot. */
void gst_cuda_mlp_close_trace(GstCudaMlp *self);

#endif
