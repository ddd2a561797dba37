/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* cudamlp's enum types, each value described for gst-inspect-1.0. */
#include "cudamlpenums.h"

#include <gst/gst.h>

#include "backend.h"
#include "frame.h"
#include "model.h"
#include "plan_cache.h"

#define DEFINE_ENUM(func, name, ...)                                                               \
  GType func(void)                                                                                 \
  {                                                                                                \
    static gsize type = 0;                                                                         \
    static const GEnumValue values[] = { __VA_ARGS__, { 0, NULL, NULL } };                         \
    if (g_once_init_enter(&type))                                                                  \
      g_once_init_leave(&type, g_enum_register_static(name, values));                              \
    return type;                                                                                   \
  }

DEFINE_ENUM(gst_cuda_mlp_mapping_get_type, "GstCudaMlpMapping",
            { PP_MAPPING_ROWS, "Each image row is one sample: K = width x channels", "rows" },
            { PP_MAPPING_PATCHES,
              "Each whole p x p patch is one sample: K = p*p*channels (edge remainders are left "
              "out)",
              "patches" })

DEFINE_ENUM(gst_cuda_mlp_backend_get_type, "GstCudaMlpBackend",
            { PP_BACKEND_AUTO, "CUDA when a device is usable, else the CPU (with a warning)",
              "auto" },
            { PP_BACKEND_CUDA, "The GPU; fails at start without a usable device", "cuda" },
            { PP_BACKEND_CPU, "The CPU, one worker thread per slot", "cpu" })

DEFINE_ENUM(gst_cuda_mlp_activation_get_type, "GstCudaMlpActivation",
            { PP_HIDDEN_AUTO,
              "From the model file (layer indices 0 and 2 mean a ReLU between them); none for "
              "generated weights",
              "auto" },
            { PP_HIDDEN_NONE, "No activation between the layers", "none" },
            { PP_HIDDEN_RELU, "ReLU between the layers", "relu" })

DEFINE_ENUM(gst_cuda_mlp_precision_get_type, "GstCudaMlpPrecision",
            { PP_PRECISION_FP32,
              "FP32 arithmetic, or exact pieces of the weights (and of the pixels, where they "
              "are not bytes) on TF32, FP16 or BF16 tensor cores adding in FP32 (error within a "
              "few times FP32's)",
              "fp32" },
            { PP_PRECISION_TF32,
              "TF32 tensor cores for the GEMMs, FP32 accumulation (the CPU computes fp32)",
              "tf32" },
            { PP_PRECISION_BF16,
              "Weights rounded to bfloat16 once, activations stored as bfloat16 between layers, "
              "FP32 accumulation, float32 scores (the CPU rounds the same way)",
              "bf16" },
            { PP_PRECISION_FP16,
              "The same in float16: 3 more bits of significand than bf16, but activations past "
              "65504 become infinite",
              "fp16" },
            { PP_N_PRECISIONS,
              "The model file's own: bf16 or fp16 for a file that keeps every weight and bias in "
              "that type, fp32 otherwise and for generated weights",
              "auto" })

DEFINE_ENUM(gst_cuda_mlp_completion_get_type, "GstCudaMlpCompletion",
            { PP_COMPLETION_EVENT_THREAD,
              "A thread that sleeps until a frame is nearly due, then polls its event, and wakes "
              "the thread that pushes results",
              "event-thread" },
            { PP_COMPLETION_CONSUMER,
              "The thread that pushes results waits for each frame itself, sleeping until it is "
              "nearly due, then polling: no hand-off between threads",
              "consumer" },
            { PP_COMPLETION_AUTO, "consumer: no hand-off between threads", "auto" })

DEFINE_ENUM(gst_cuda_mlp_tuning_get_type, "GstCudaMlpTuning",
            { PP_TUNING_CACHED,
              "Use the plan stored for this GPU, model, frame size and slot count; time one and "
              "store it where none fits",
              "cached" },
            { PP_TUNING_FULL, "Always time the choices; store the plan", "full" },
            { PP_TUNING_QUICK,
              "Time each choice once and take cuBLAS's first algorithm; store nothing (for "
              "compute-sanitizer runs, where kernels are hundreds of times slower)",
              "quick" })

DEFINE_ENUM(gst_cuda_mlp_color_get_type, "GstCudaMlpColor",
            { PP_COLOR_RGB,
              "R,G,B in [0, 1]; YUV frames converted by the caps' colorimetry (its range, and "
              "its matrix's Kr and Kb: BT.601, BT.709, BT.2020), chroma interpolated bilinearly "
              "between the nearest samples at the caps' chroma-site, edges clamped (the exact "
              "steps are in docs/elements.md)",
              "rgb" },
            { PP_COLOR_LUMA,
              "Luma alone: Y/255, or (Y-16)/219 for limited range (YUV or GRAY8; only the luma "
              "plane of a planar frame is read): K = width for rows, p*p for patches",
              "luma" })

DEFINE_ENUM(gst_cuda_mlp_output_get_type, "GstCudaMlpOutput",
            { GST_CUDA_MLP_OUTPUT_AUTO,
              "tensors, unless downstream takes video and not other/tensors (scoreoverlay): "
              "video-meta then",
              "auto" },
            { GST_CUDA_MLP_OUTPUT_TENSORS,
              "One other/tensors buffer of the results per frame (NNStreamer's format)",
              "tensors" },
            { GST_CUDA_MLP_OUTPUT_VIDEO_META,
              "The frame itself, unchanged, with its results attached "
              "(a GstCustomMeta named PpScoresMeta, pingpong/ppscores.h; scoreoverlay draws it)",
              "video-meta" })

void
gst_cuda_mlp_mark_enums_as_api(void)
{
  const GType types[] = { GST_TYPE_CUDA_MLP_MAPPING,    GST_TYPE_CUDA_MLP_BACKEND,
                          GST_TYPE_CUDA_MLP_ACTIVATION, GST_TYPE_CUDA_MLP_PRECISION,
                          GST_TYPE_CUDA_MLP_COMPLETION, GST_TYPE_CUDA_MLP_COLOR,
                          GST_TYPE_CUDA_MLP_TUNING,     GST_TYPE_CUDA_MLP_OUTPUT };
  for (gsize i = 0; i < G_N_ELEMENTS(types); i++)
    gst_type_mark_as_plugin_api(types[i], 0);
}
