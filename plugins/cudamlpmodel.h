/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Where cudamlp's weights come from: a model file (model, layers,
 * hidden-activation), or weights generated from the layers property or
 * hidden-sizes/hidden-size and outputs for the K the frames give. */
#ifndef GST_CUDA_MLP_MODEL_H
#define GST_CUDA_MLP_MODEL_H

#include "gstcudamlp.h"

void gst_cuda_mlp_models_init(GstCudaMlpModels *models);
void gst_cuda_mlp_models_clear(GstCudaMlpModels *models);

/* At start: the model file loaded (or the generated weights' description
 * checked), with its warnings posted; FALSE with the error posted. */
gboolean gst_cuda_mlp_model_start(GstCudaMlp *self);
void gst_cuda_mlp_model_stop(GstCudaMlp *self);

/* The K the frames must give the model (0: any, the generated weights
 * take the frames' K). From any thread, in any state: a model file is
 * loaded for it if need be, and one that cannot be loaded narrows nothing
 * (start says why). */
guint gst_cuda_mlp_model_inputs(GstCudaMlp *self);

/* The type the model file keeps its weights in (model.h's `stored`), after
 * start; float32 for generated weights. */
pp_dtype gst_cuda_mlp_model_stored(GstCudaMlp *self);

/* The model for frames giving K inputs, after start; NULL with *msg. */
const pp_model *gst_cuda_mlp_model_for(GstCudaMlp *self, guint k, gchar **msg);

#endif
