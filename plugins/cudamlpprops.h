/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* cudamlp's properties: their ids, defaults, descriptions (what
 * gst-inspect-1.0 prints), and getting and setting them under the object
 * lock. The element reads them at start and at caps. */
#ifndef GST_CUDA_MLP_PROPS_H
#define GST_CUDA_MLP_PROPS_H

#include "gstcudamlp.h"

enum {
  PROP_0,
  PROP_MODEL,
  PROP_SLOTS,
  PROP_MAPPING,
  PROP_PATCH_SIZE,
  PROP_HIDDEN_SIZE,
  PROP_HIDDEN_SIZES,
  PROP_OUTPUTS,
  PROP_LAYERS,
  PROP_HIDDEN_ACTIVATION,
  PROP_COLOR,
  PROP_BACKEND,
  PROP_DEVICE_ID,
  PROP_PRECISION,
  PROP_COMPLETION,
  PROP_OUTPUT,
  PROP_TUNING,
  PROP_PLAN,
  PROP_PREWAKE,
  PROP_SHARED,
  PROP_MAX_BATCH,
  PROP_TRACE_FILE,
  PROP_STATS,
  N_PROPS,
};

/* Installs every property of the list above; PROP_STATS is the read-only
 * stats, whose value the element builds. */
void gst_cuda_mlp_install_properties(GObjectClass *object_class);

/* The defaults, into a new element; and freeing them. */
void gst_cuda_mlp_init_config(GstCudaMlp *self);
void gst_cuda_mlp_clear_config(GstCudaMlp *self);

/* GObjectClass.set_property; and get_property for all but PROP_STATS. */
void gst_cuda_mlp_set_config(GObject *object, guint prop_id, const GValue *value,
                             GParamSpec *pspec);
void gst_cuda_mlp_get_config(GstCudaMlp *self, guint prop_id, GValue *value, GParamSpec *pspec);

#endif
