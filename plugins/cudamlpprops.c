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
#define DEFAULT_PRECISION PP_PRECISION_FP32
/* Measured faster on the H100 host: docs/PERFORMANCE.md, "Completion". */
#define DEFAULT_COMPLETION PP_COMPLETION_AUTO
#define DEFAULT_OUTPUT GST_CUDA_MLP_OUTPUT_AUTO

#define CONFIG_FLAGS (G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY)

void
gst_cuda_mlp_install_properties(GObjectClass *object_class, GParamSpec *props[N_PROPS])
{
  props[PROP_MODEL] = g_param_spec_string(
      "model", "Model",
      "safetensors file of an nn.Sequential of 1 to 8 nn.Linear layers and activations (F32, F16 "
      "or BF16), best written by tools/pingpong-export, which records the activations; see the "
      "layers property for files without that record. Unset: deterministic weights generated "
      "from K and layers, or hidden-size/hidden-sizes and outputs",
      NULL, CONFIG_FLAGS);
  props[PROP_SLOTS] = g_param_spec_uint(
      "slots", "Slots",
      "Frames in flight: each slot has its own pinned buffers and stream (2 = ping-pong; 3 lets "
      "upload, compute and download all overlap)",
      1, PP_MAX_SLOTS, DEFAULT_SLOTS, CONFIG_FLAGS);
  props[PROP_MAPPING] =
      g_param_spec_enum("mapping", "Mapping", "How a video frame becomes the N×K input matrix X",
                        GST_TYPE_CUDA_MLP_MAPPING, DEFAULT_MAPPING, CONFIG_FLAGS);
  props[PROP_PATCH_SIZE] = g_param_spec_uint("patch-size", "Patch size",
                                             "Side p of the square patches of mapping=patches", 1,
                                             4096, DEFAULT_PATCH_SIZE, CONFIG_FLAGS);
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
      "shapes the generated weights (every Linear then needs its widths)",
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
      "precision", "Precision", "Arithmetic of the GEMMs on the GPU (the CPU always uses fp32)",
      GST_TYPE_CUDA_MLP_PRECISION, DEFAULT_PRECISION, CONFIG_FLAGS);
  props[PROP_COMPLETION] =
      g_param_spec_enum("completion", "Completion", "How the GPU tells the element a frame is done",
                        GST_TYPE_CUDA_MLP_COMPLETION, DEFAULT_COMPLETION, CONFIG_FLAGS);
  props[PROP_OUTPUT] = g_param_spec_enum(
      "output", "Output",
      "What goes downstream: other/tensors buffers of the results, or each frame unchanged (its "
      "own caps) carrying its results as a GstPpScoresMeta, for scoreoverlay or an appsink",
      GST_TYPE_CUDA_MLP_OUTPUT, DEFAULT_OUTPUT, CONFIG_FLAGS);
  props[PROP_STATS] = g_param_spec_boxed(
      "stats", "Statistics",
      "Backend and how it runs frames (detail: MLP path, loads, completion, graphs), frames "
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
  self->slots = DEFAULT_SLOTS;
  self->mapping = DEFAULT_MAPPING;
  self->patch_size = DEFAULT_PATCH_SIZE;
  self->hidden_size = DEFAULT_HIDDEN_SIZE;
  self->outputs = DEFAULT_OUTPUTS;
  self->hidden_activation = DEFAULT_ACTIVATION;
  self->color = DEFAULT_COLOR;
  self->output = DEFAULT_OUTPUT;
  self->device_ids = g_strdup(DEFAULT_DEVICE_ID);
  self->backend_options = (pp_backend_options){
    .kind = DEFAULT_BACKEND,
    .device_id = 0,
    .precision = DEFAULT_PRECISION,
    .completion = DEFAULT_COMPLETION,
  };
}

void
gst_cuda_mlp_set_config(GObject *object, guint prop_id, const GValue *value, GParamSpec *pspec)
{
  GstCudaMlp *self = GST_CUDA_MLP(object);
  GST_OBJECT_LOCK(self);
  switch (prop_id) {
    case PROP_MODEL:
      g_free(self->model_path);
      self->model_path = g_value_dup_string(value);
      break;
    case PROP_SLOTS:
      self->slots = g_value_get_uint(value);
      break;
    case PROP_MAPPING:
      self->mapping = g_value_get_enum(value);
      break;
    case PROP_PATCH_SIZE:
      self->patch_size = g_value_get_uint(value);
      break;
    case PROP_HIDDEN_SIZES:
      g_free(self->hidden_sizes);
      self->hidden_sizes = g_value_dup_string(value);
      break;
    case PROP_LAYERS:
      g_free(self->layers);
      self->layers = g_value_dup_string(value);
      break;
    case PROP_HIDDEN_SIZE:
      self->hidden_size = g_value_get_uint(value);
      break;
    case PROP_OUTPUTS:
      self->outputs = g_value_get_uint(value);
      break;
    case PROP_HIDDEN_ACTIVATION:
      self->hidden_activation = g_value_get_enum(value);
      break;
    case PROP_COLOR:
      self->color = g_value_get_enum(value);
      break;
    case PROP_BACKEND:
      self->backend_options.kind = g_value_get_enum(value);
      break;
    case PROP_DEVICE_ID: {
      /* Checked now, reported at start: an element error says what to fix. */
      g_free(self->device_ids);
      self->device_ids = g_value_dup_string(value);
      g_clear_pointer(&self->device_error, g_free);
      pp_backend_options parsed = self->backend_options;
      if (pp_backend_parse_devices(self->device_ids, &parsed, &self->device_error) == 0)
        self->backend_options = parsed;
      break;
    }
    case PROP_PRECISION:
      self->backend_options.precision = g_value_get_enum(value);
      break;
    case PROP_COMPLETION:
      self->backend_options.completion = g_value_get_enum(value);
      break;
    case PROP_OUTPUT:
      self->output = g_value_get_enum(value);
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
  GST_OBJECT_LOCK(self);
  switch (prop_id) {
    case PROP_MODEL:
      g_value_set_string(value, self->model_path);
      break;
    case PROP_SLOTS:
      g_value_set_uint(value, self->slots);
      break;
    case PROP_MAPPING:
      g_value_set_enum(value, self->mapping);
      break;
    case PROP_PATCH_SIZE:
      g_value_set_uint(value, self->patch_size);
      break;
    case PROP_HIDDEN_SIZES:
      g_value_set_string(value, self->hidden_sizes);
      break;
    case PROP_LAYERS:
      g_value_set_string(value, self->layers);
      break;
    case PROP_HIDDEN_SIZE:
      g_value_set_uint(value, self->hidden_size);
      break;
    case PROP_OUTPUTS:
      g_value_set_uint(value, self->outputs);
      break;
    case PROP_HIDDEN_ACTIVATION:
      g_value_set_enum(value, self->hidden_activation);
      break;
    case PROP_COLOR:
      g_value_set_enum(value, self->color);
      break;
    case PROP_BACKEND:
      g_value_set_enum(value, self->backend_options.kind);
      break;
    case PROP_DEVICE_ID:
      g_value_set_string(value, self->device_ids);
      break;
    case PROP_PRECISION:
      g_value_set_enum(value, self->backend_options.precision);
      break;
    case PROP_COMPLETION:
      g_value_set_enum(value, self->backend_options.completion);
      break;
    case PROP_OUTPUT:
      g_value_set_enum(value, self->output);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID(self, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK(self);
}
