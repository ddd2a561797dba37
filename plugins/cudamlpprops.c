/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* cudamlp's properties: installed with their descriptions, read and written
 * under the object lock. */
#include "cudamlpprops.h"

#include "cudamlpenums.h"

#define DEFAULT_SLOTS 2
#define DEFAULT_MAPPING PP_MAPPING_ROWS
#define DEFAULT_PATCH_SIZE 16
#define DEFAULT_HIDDEN_SIZE 1024
#define DEFAULT_OUTPUTS 1
#define DEFAULT_ACTIVATION PP_HIDDEN_AUTO
#define DEFAULT_COLOR PP_COLOR_RGB
#define DEFAULT_BACKEND PP_BACKEND_AUTO
#define DEFAULT_DEVICE_ID "0"
#define DEFAULT_PRECISION GST_CUDA_MLP_PRECISION_AUTO
#define DEFAULT_COMPLETION PP_COMPLETION_AUTO
#define DEFAULT_OUTPUT GST_CUDA_MLP_OUTPUT_AUTO
#define DEFAULT_TUNING PP_TUNING_CACHED
#define DEFAULT_PREWAKE TRUE
#define DEFAULT_SHARED FALSE
#define DEFAULT_MAX_BATCH 1

#define CONFIG_FLAGS (G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY)

void
gst_cuda_mlp_install_properties(GObjectClass *object_class)
{
  static GParamSpec *props[N_PROPS];
  props[PROP_MODEL] = g_param_spec_string(
      "model", "Model",
      "safetensors file of an nn.Sequential of 1 to 8 nn.Linear layers and activations (F32, F16 "
      "or BF16), best written by pingpong-export, which records the activations; see the layers "
      "property for files without that record. Unset: deterministic weights generated from K and "
      "layers, or hidden-size/hidden-sizes and outputs",
      NULL, CONFIG_FLAGS);
  props[PROP_SLOTS] = g_param_spec_uint(
      "slots", "Slots",
      "Frames in flight: each slot has its own pinned buffers and stream (2 = ping-pong; 3 lets "
      "upload, compute and download all overlap)",
      1, PP_MAX_SLOTS, DEFAULT_SLOTS, CONFIG_FLAGS);
  props[PROP_MAPPING] =
      g_param_spec_enum("mapping", "Mapping", "How a video frame becomes the N x K input matrix X",
                        GST_TYPE_CUDA_MLP_MAPPING, DEFAULT_MAPPING, CONFIG_FLAGS);
  props[PROP_PATCH_SIZE] = g_param_spec_uint(
      "patch-size", "Patch size",
      "Side p of the square patches of mapping=patches: frames must hold at least one", 1, 4096,
      DEFAULT_PATCH_SIZE, CONFIG_FLAGS);
  props[PROP_HIDDEN_SIZE] =
      g_param_spec_uint("hidden-size", "Hidden size",
                        "Hidden units D of generated weights (ignored with a model file)", 1, 65536,
                        DEFAULT_HIDDEN_SIZE, CONFIG_FLAGS);
  props[PROP_HIDDEN_SIZES] = g_param_spec_string(
      "hidden-sizes", "Hidden sizes",
      "Widths of the hidden layers of generated weights, e.g. \"512,256,64\" for four Linear "
      "layers (hidden-activation between them, ReLU at the end); unset: one, of hidden-size",
      NULL, CONFIG_FLAGS);
  props[PROP_LAYERS] = g_param_spec_string(
      "layers", "Layers",
      "The model's Linear layers and activations in order, e.g. \"linear, gelu, linear\" or "
      "\"linear(192,512), leaky_relu(0.1), linear(512,1)\". Modules: linear[(IN,OUT)], relu, "
      "leaky_relu[(SLOPE)], gelu, gelu_tanh, silu, sigmoid, tanh, identity; at most one "
      "activation after each Linear. Overrides the model file's own description; a file with "
      "neither runs as Linear, [ReLU,] Linear, ReLU with a warning. Without a model file it "
      "shapes the generated weights (every Linear then needs its widths, and caps negotiate the "
      "frames that give the first one's IN)",
      NULL, CONFIG_FLAGS);
  props[PROP_OUTPUTS] = g_param_spec_uint(
      "outputs", "Outputs", "Outputs O per sample of generated weights (ignored with a model file)",
      1, 65536, DEFAULT_OUTPUTS, CONFIG_FLAGS);
  props[PROP_HIDDEN_ACTIVATION] = g_param_spec_enum(
      "hidden-activation", "Hidden activation",
      "Activation between the layers of generated weights and of a model file that describes "
      "no activations (auto: for a file, ReLU when the Linear layers' indices are two apart)",
      GST_TYPE_CUDA_MLP_ACTIVATION, DEFAULT_ACTIVATION, CONFIG_FLAGS);
  props[PROP_COLOR] = g_param_spec_enum(
      "color", "Color",
      "What the model sees of a pixel: R,G,B (YUV frames are converted on the GPU) or luma alone",
      GST_TYPE_CUDA_MLP_COLOR, DEFAULT_COLOR, CONFIG_FLAGS);
  props[PROP_BACKEND] = g_param_spec_enum("backend", "Backend", "Where the MLP runs",
                                          GST_TYPE_CUDA_MLP_BACKEND, DEFAULT_BACKEND, CONFIG_FLAGS);
  props[PROP_DEVICE_ID] = g_param_spec_string(
      "device-id", "Device ID",
      "CUDA device to run on (backend=cuda or auto): a number, a list such as \"0,1\" to spread "
      "the slots over several GPUs (slot i on the i-th mod G, each with its own copy of the "
      "weights; results stay in order; slots must be at least G), or -1 for every visible GPU. "
      "Frames in CUDA memory need a single device. With backend=cpu a list runs one CPU backend "
      "per entry",
      DEFAULT_DEVICE_ID, CONFIG_FLAGS);
  props[PROP_PRECISION] = g_param_spec_enum(
      "precision", "Precision",
      "Arithmetic of the layers: fp32, tf32 (GPU tensor cores), bf16 or fp16 (weights and "
      "activations rounded to 16 bits, sums in FP32; the CPU backend rounds alike), or auto: "
      "bf16 or fp16 for a model file stored in that type, else fp32 (stats' precision says which)",
      GST_TYPE_CUDA_MLP_PRECISION, DEFAULT_PRECISION, CONFIG_FLAGS);
  props[PROP_COMPLETION] =
      g_param_spec_enum("completion", "Completion", "How the GPU tells the element a frame is done",
                        GST_TYPE_CUDA_MLP_COMPLETION, DEFAULT_COMPLETION, CONFIG_FLAGS);
  props[PROP_OUTPUT] = g_param_spec_enum(
      "output", "Output",
      "What goes downstream: other/tensors buffers of the results, or each frame unchanged (its "
      "own caps) carrying its results as a PpScoresMeta (a GstCustomMeta), for scoreoverlay or an "
      "appsink",
      GST_TYPE_CUDA_MLP_OUTPUT, DEFAULT_OUTPUT, CONFIG_FLAGS);
  props[PROP_TUNING] = g_param_spec_enum(
      "tuning", "Tuning",
      "How the GPU backend makes its plan (its kernels, cuBLAS algorithms and how frames cross) "
      "for a model, frame size and slot count: cached (a plan stored under the user's cache "
      "directory, $XDG_CACHE_HOME/pingpong, where one fits, else timed and stored), full (always "
      "timed, then stored) or quick (each choice timed once, nothing stored)",
      GST_TYPE_CUDA_MLP_TUNING, DEFAULT_TUNING, CONFIG_FLAGS);
  props[PROP_PLAN] = g_param_spec_string(
      "plan", "Plan",
      "A plan to run instead of tuning one, as the stats' plan field prints it, whole or in part "
      "(the rest is tuned), e.g. \"kernels=fused frames=in-place\" or \"kernels=cublas+rowdot "
      "frames=chunks:4\". Parts: kernels (own, own64, cublas, split:P, rowdot per layer joined by "
      "+; or fused, small:R, wide, warp), frames (whole, chunks:C, in-place), graphs and signal "
      "(on, off), completion, gemmI (layer I's cuBLAS algorithm). Never cached",
      NULL, CONFIG_FLAGS);
  props[PROP_PREWAKE] = g_param_spec_boolean(
      "prewake", "Pre-wake",
      "When frames come at a steady pace, the thread that pushes results wakes shortly before "
      "each is due and watches for it awake (up to ~100 us of a core per frame), so a live "
      "frame's result is not late by a sleeping thread's wake-up. Off where no core may spin",
      DEFAULT_PREWAKE, CONFIG_FLAGS);
  props[PROP_SHARED] = g_param_spec_boolean(
      "shared", "Shared",
      "Run on one GPU backend with every other shared cudamlp of the process that has the same "
      "backend, device-id, precision, model, frame layout, slots and plan: the weights, plan, "
      "CUDA streams and buffers are held once, and the streams' frames take turns in its slots "
      "(for many streams, e.g. cameras, on one GPU). Results come through one completion thread "
      "(completion=event-thread) and each stream keeps its own order",
      DEFAULT_SHARED, CONFIG_FLAGS);
  props[PROP_MAX_BATCH] = g_param_spec_uint(
      "max-batch", "Max batch",
      "With shared=true: frames of the streams sharing the backend run as one job of up to this "
      "many frames (and 32768 samples), taken in the order they came as a slot comes free, so "
      "many streams of small frames keep the GPU busy with few launches; one stream alone still "
      "runs frame by frame. Only for layouts whose frames lie back to back as one (GRAY8/RGB "
      "rows, patches of whole rows, luma, tensors; not YUV's colours); 1: one frame at a time",
      1, PP_MAX_BATCH, DEFAULT_MAX_BATCH, CONFIG_FLAGS);
  props[PROP_TRACE_FILE] = g_param_spec_string(
      "trace-file", "Trace file",
      "Writes a Chrome trace of the run (host and GPU spans, every frame timed) to this file at "
      "stop, for Perfetto or chrome://tracing; \"{name}\" becomes the element's name. Unset: "
      "PINGPONG_TRACE, if set",
      NULL, CONFIG_FLAGS);
  props[PROP_STATS] = g_param_spec_boxed(
      "stats", "Statistics",
      "Backend and how it runs frames (detail; precision: the one it runs, auto resolved; "
      "streams: how many streams run on the backend, "
      "more than 1 where shared; batch-mean: frames a GPU job held on average, of every stream "
      "on a shared backend with max-batch; plan, plan-source and how many plans came from "
      "the cache or were made; startup: what starting took, part by part, in ms, and "
      "cublaslt: whether the plan runs layers on cuBLASLt, loaded early where the last start "
      "with these settings did), frames "
      "done, per-frame latency through the element (mean over all frames; p50, p99 over the "
      "last 4096) in microseconds, mean GPU stage times (sampled), staged (copied) inputs, and "
      "where latency goes: the submit call, submit to completion, completion to push; and per "
      "device (devices: an array of structures with id, slots, frames, latency-mean-us and "
      "mlp-mean-us)",
      GST_TYPE_STRUCTURE, G_PARAM_READABLE | G_PARAM_STATIC_STRINGS);
  g_object_class_install_properties(object_class, N_PROPS, props);
}

void
gst_cuda_mlp_init_config(GstCudaMlp *self)
{
  GstCudaMlpSettings *s = &self->settings;
  s->slots = DEFAULT_SLOTS;
  s->mapping = DEFAULT_MAPPING;
  s->patch_size = DEFAULT_PATCH_SIZE;
  s->hidden_size = DEFAULT_HIDDEN_SIZE;
  s->outputs = DEFAULT_OUTPUTS;
  s->hidden_activation = DEFAULT_ACTIVATION;
  s->color = DEFAULT_COLOR;
  s->output = DEFAULT_OUTPUT;
  s->device_ids = g_strdup(DEFAULT_DEVICE_ID);
  s->tuning = DEFAULT_TUNING;
  s->prewake = DEFAULT_PREWAKE;
  s->shared = DEFAULT_SHARED;
  s->backend = (pp_backend_options){
    .kind = DEFAULT_BACKEND,
    .device_id = 0,
    .precision = DEFAULT_PRECISION,
    .completion = DEFAULT_COMPLETION,
    .max_batch = DEFAULT_MAX_BATCH,
  };
}

void
gst_cuda_mlp_clear_config(GstCudaMlp *self)
{
  GstCudaMlpSettings *s = &self->settings;
  g_clear_pointer(&s->model_path, g_free);
  g_clear_pointer(&s->layers, g_free);
  g_clear_pointer(&s->hidden_sizes, g_free);
  g_clear_pointer(&s->device_ids, g_free);
  g_clear_pointer(&s->device_error, g_free);
  g_clear_pointer(&s->plan, g_free);
  g_clear_pointer(&s->trace_file, g_free);
}

static void
replace_string(gchar **field, const GValue *value)
{
  g_free(*field);
  *field = g_value_dup_string(value);
}

void
gst_cuda_mlp_set_config(GObject *object, guint prop_id, const GValue *value, GParamSpec *pspec)
{
  GstCudaMlp *self = GST_CUDA_MLP(object);
  GstCudaMlpSettings *s = &self->settings;
  GST_OBJECT_LOCK(self);
  switch (prop_id) {
    case PROP_MODEL:
      replace_string(&s->model_path, value);
      break;
    case PROP_SLOTS:
      s->slots = g_value_get_uint(value);
      break;
    case PROP_MAPPING:
      s->mapping = g_value_get_enum(value);
      break;
    case PROP_PATCH_SIZE:
      s->patch_size = g_value_get_uint(value);
      break;
    case PROP_HIDDEN_SIZES:
      replace_string(&s->hidden_sizes, value);
      break;
    case PROP_LAYERS:
      replace_string(&s->layers, value);
      break;
    case PROP_HIDDEN_SIZE:
      s->hidden_size = g_value_get_uint(value);
      break;
    case PROP_OUTPUTS:
      s->outputs = g_value_get_uint(value);
      break;
    case PROP_HIDDEN_ACTIVATION:
      s->hidden_activation = g_value_get_enum(value);
      break;
    case PROP_COLOR:
      s->color = g_value_get_enum(value);
      break;
    case PROP_BACKEND:
      s->backend.kind = g_value_get_enum(value);
      break;
    case PROP_DEVICE_ID: {
      /* Checked now, reported at start: an element error says what to fix. */
      replace_string(&s->device_ids, value);
      g_clear_pointer(&s->device_error, g_free);
      pp_backend_options parsed = s->backend;
      if (pp_backend_parse_devices(s->device_ids, &parsed, &s->device_error) == 0)
        s->backend = parsed;
      break;
    }
    case PROP_PRECISION:
      s->backend.precision = g_value_get_enum(value);
      break;
    case PROP_COMPLETION:
      s->backend.completion = g_value_get_enum(value);
      break;
    case PROP_OUTPUT:
      s->output = g_value_get_enum(value);
      break;
    case PROP_TUNING:
      s->tuning = g_value_get_enum(value);
      break;
    case PROP_PLAN:
      replace_string(&s->plan, value);
      break;
    case PROP_PREWAKE:
      s->prewake = g_value_get_boolean(value);
      break;
    case PROP_SHARED:
      s->shared = g_value_get_boolean(value);
      break;
    case PROP_MAX_BATCH:
      s->backend.max_batch = g_value_get_uint(value);
      break;
    case PROP_TRACE_FILE:
      replace_string(&s->trace_file, value);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK(self);
}

void
gst_cuda_mlp_get_config(GstCudaMlp *self, guint prop_id, GValue *value, GParamSpec *pspec)
{
  const GstCudaMlpSettings *s = &self->settings;
  GST_OBJECT_LOCK(self);
  switch (prop_id) {
    case PROP_MODEL:
      g_value_set_string(value, s->model_path);
      break;
    case PROP_SLOTS:
      g_value_set_uint(value, s->slots);
      break;
    case PROP_MAPPING:
      g_value_set_enum(value, s->mapping);
      break;
    case PROP_PATCH_SIZE:
      g_value_set_uint(value, s->patch_size);
      break;
    case PROP_HIDDEN_SIZES:
      g_value_set_string(value, s->hidden_sizes);
      break;
    case PROP_LAYERS:
      g_value_set_string(value, s->layers);
      break;
    case PROP_HIDDEN_SIZE:
      g_value_set_uint(value, s->hidden_size);
      break;
    case PROP_OUTPUTS:
      g_value_set_uint(value, s->outputs);
      break;
    case PROP_HIDDEN_ACTIVATION:
      g_value_set_enum(value, s->hidden_activation);
      break;
    case PROP_COLOR:
      g_value_set_enum(value, s->color);
      break;
    case PROP_BACKEND:
      g_value_set_enum(value, s->backend.kind);
      break;
    case PROP_DEVICE_ID:
      g_value_set_string(value, s->device_ids);
      break;
    case PROP_PRECISION:
      g_value_set_enum(value, s->backend.precision);
      break;
    case PROP_COMPLETION:
      g_value_set_enum(value, s->backend.completion);
      break;
    case PROP_OUTPUT:
      g_value_set_enum(value, s->output);
      break;
    case PROP_TUNING:
      g_value_set_enum(value, s->tuning);
      break;
    case PROP_PLAN:
      g_value_set_string(value, s->plan);
      break;
    case PROP_PREWAKE:
      g_value_set_boolean(value, s->prewake);
      break;
    case PROP_SHARED:
      g_value_set_boolean(value, s->shared);
      break;
    case PROP_MAX_BATCH:
      g_value_set_uint(value, s->backend.max_batch);
      break;
    case PROP_TRACE_FILE:
      g_value_set_string(value, s->trace_file);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID(self, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK(self);
}
