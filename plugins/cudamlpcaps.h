/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* cudamlp's negotiation (cudamlpcaps.c): the caps queries, accept-caps,
 * set_caps and the allocation proposal. */
#ifndef GST_CUDA_MLP_CAPS_H
#define GST_CUDA_MLP_CAPS_H

#include "gstcudamlp.h"

/* What set_caps made of a caps event: taken, refused (the frames do not
 * fit the element's settings or model), or a failure of the backend that
 * stops the stream. Either failure has been posted as an element error. */
typedef enum {
  CAPS_TAKEN,
  CAPS_REFUSED,
  CAPS_FAILED,
} caps_outcome;

caps_outcome gst_cuda_mlp_set_caps(GstCudaMlp *self, GstCaps *caps);

/* Whether frames go downstream with their scores (else other/tensors). */
gboolean gst_cuda_mlp_frames_out(GstCudaMlp *self);

gboolean gst_cuda_mlp_accept_caps(GstCudaMlp *self, GstQuery *query);
gboolean gst_cuda_mlp_sink_caps_query(GstCudaMlp *self, GstQuery *query);
gboolean gst_cuda_mlp_src_caps_query(GstCudaMlp *self, GstQuery *query);
gboolean gst_cuda_mlp_propose_allocation(GstCudaMlp *self, GstQuery *query);

#endif
