/* cudamlp's caps queries and what goes downstream: the frames it takes
 * (narrowed to a model file's K), and tensors or the frames themselves with
 * their scores (output=auto decides by what downstream takes).
 * `cuda_memory`: whether frames in CUDA memory can be read now. */
#ifndef GST_CUDA_MLP_CAPS_H
#define GST_CUDA_MLP_CAPS_H

#include "gstcudamlp.h"

/* Whether frames go downstream with their scores (else other/tensors). */
gboolean gst_cuda_mlp_frames_out(GstCudaMlp *self);

gboolean gst_cuda_mlp_accept_caps(GstCudaMlp *self, GstQuery *query, gboolean cuda_memory);
gboolean gst_cuda_mlp_sink_caps_query(GstCudaMlp *self, GstQuery *query, gboolean cuda_memory);
gboolean gst_cuda_mlp_src_caps_query(GstCudaMlp *self, GstQuery *query, gboolean cuda_memory);

#endif
