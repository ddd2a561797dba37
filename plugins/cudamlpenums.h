/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* GEnum types behind cudamlp's enum properties, so gst-inspect-1.0 lists
 * every choice. */
#ifndef GST_CUDA_MLP_ENUMS_H
#define GST_CUDA_MLP_ENUMS_H

#include <glib-object.h>

#include "precision.h"

G_BEGIN_DECLS

#define GST_TYPE_CUDA_MLP_MAPPING (gst_cuda_mlp_mapping_get_type())
GType gst_cuda_mlp_mapping_get_type(void);

#define GST_TYPE_CUDA_MLP_BACKEND (gst_cuda_mlp_backend_get_type())
GType gst_cuda_mlp_backend_get_type(void);

#define GST_TYPE_CUDA_MLP_ACTIVATION (gst_cuda_mlp_activation_get_type())
GType gst_cuda_mlp_activation_get_type(void);

#define GST_TYPE_CUDA_MLP_PRECISION (gst_cuda_mlp_precision_get_type())
/* precision=auto: the model file's own, resolved at start. */
#define GST_CUDA_MLP_PRECISION_AUTO ((pp_precision) PP_N_PRECISIONS)
GType gst_cuda_mlp_precision_get_type(void);

#define GST_TYPE_CUDA_MLP_COMPLETION (gst_cuda_mlp_completion_get_type())
GType gst_cuda_mlp_completion_get_type(void);

#define GST_TYPE_CUDA_MLP_COLOR (gst_cuda_mlp_color_get_type())
GType gst_cuda_mlp_color_get_type(void);

#define GST_TYPE_CUDA_MLP_TUNING (gst_cuda_mlp_tuning_get_type())
GType gst_cuda_mlp_tuning_get_type(void);

/* What cudamlp pushes downstream. */
typedef enum {
  GST_CUDA_MLP_OUTPUT_AUTO,
  GST_CUDA_MLP_OUTPUT_TENSORS,
  GST_CUDA_MLP_OUTPUT_VIDEO_META,
} GstCudaMlpOutput;

#define GST_TYPE_CUDA_MLP_OUTPUT (gst_cuda_mlp_output_get_type())
GType gst_cuda_mlp_output_get_type(void);

/* Marks every type above as plugin API, for the documentation. */
void gst_cuda_mlp_mark_enums_as_api(void);

G_END_DECLS

#endif
