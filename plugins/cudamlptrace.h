/* cudamlp's side of PINGPONG_TRACE (src/trace.h): where the trace goes,
 * how many spans it keeps, and writing it at stop. */
#ifndef GST_CUDA_MLP_TRACE_H
#define GST_CUDA_MLP_TRACE_H

#include "gstcudamlp.h"

/* The path PINGPONG_TRACE names, "{name}" made the element's name; NULL
 * when tracing is off. Free with g_free. */
gchar *gst_cuda_mlp_trace_path(GstCudaMlp *self);
/* PINGPONG_TRACE_SPANS, or the default. */
guint gst_cuda_mlp_trace_capacity(void);
/* Writes and frees the element's trace, if any; a warning if it cannot. */
void gst_cuda_mlp_close_trace(GstCudaMlp *self);

#endif
