/**
 * SECTION:element-cudamlp
 * @title: cudamlp
 *
 * Runs a two-layer perceptron on every frame, on an NVIDIA GPU (or the CPU),
 * with several frames in flight: frame i goes to slot i mod N, each slot with
 * its own pinned host memory and CUDA stream, so uploads, compute and
 * downloads of successive frames overlap. The chain function returns as soon
 * as the frame is queued; a task on the source pad pushes each result, in
 * order, with the frame's timestamps, when it completes.
 *
 * Each frame becomes an N×K matrix X (see #GstCudaMlp:mapping); the output is
 * one other/tensors float32 buffer of N×O values per frame, ReLU(MLP(X)).
 *
 * ## Example launch line
 * |[
 * gst-launch-1.0 videotestsrc num-buffers=300 ! video/x-raw,format=GRAY8,width=1024,height=1024 ! cudamlp ! fakesink
 * ]|
 */
#include "gstcudamlp.h"

#include <errno.h>
#include <gst/video/video.h>

#include "cudainput.h"
#include "cudamlpcaps.h"
#include "cudamlptrace.h"
#include "stats.h"
#include "trace.h"
#include "cudamlpenums.h"
#include "cudamlpprops.h"
#include "gstpinnedallocator.h"
#include "gstppscoresmeta.h"
#include "tensorcaps.h"

GST_DEBUG_CATEGORY_STATIC(gst_cuda_mlp_debug);
#define GST_CAT_DEFAULT gst_cuda_mlp_debug

static GParamSpec *properties[N_PROPS];

static GstStaticPadTemplate sink_template =
    GST_STATIC_PAD_TEMPLATE("sink", GST_PAD_SINK, GST_PAD_ALWAYS, GST_STATIC_CAPS(PP_SINK_CAPS));
static GstStaticPadTemplate src_template =
    GST_STATIC_PAD_TEMPLATE("src", GST_PAD_SRC, GST_PAD_ALWAYS,
                            GST_STATIC_CAPS(PP_SRC_CAPS "; " PP_SINK_CAPS)); /* output=video-meta */

#define gst_cuda_mlp_parent_class parent_class
G_DEFINE_TYPE(GstCudaMlp, gst_cuda_mlp, GST_TYPE_ELEMENT);
GST_ELEMENT_REGISTER_DEFINE(cudamlp, "cudamlp", GST_RANK_NONE, GST_TYPE_CUDA_MLP);

static GstFlowReturn gst_cuda_mlp_chain(GstPad *pad, GstObject *parent, GstBuffer *buffer);
static gboolean gst_cuda_mlp_sink_event(GstPad *pad, GstObject *parent, GstEvent *event);
static gboolean gst_cuda_mlp_sink_query(GstPad *pad, GstObject *parent, GstQuery *query);
static gboolean gst_cuda_mlp_src_query(GstPad *pad, GstObject *parent, GstQuery *query);
static gboolean gst_cuda_mlp_src_activate_mode(GstPad *pad, GstObject *parent, GstPadMode mode,
                                               gboolean active);
static gboolean gst_cuda_mlp_sink_activate_mode(GstPad *pad, GstObject *parent, GstPadMode mode,
                                                gboolean active);
static void gst_cuda_mlp_loop(GstPad *pad);

/* ---- per-frame bookkeeping ---------------------------------------------- */

static void
release_frame(GstCudaMlpFrame *s)
{
  if (s->input) {
    gst_buffer_unmap(s->input, &s->input_map);
    gst_clear_buffer(&s->input);
  }
  if (s->output) {
    gst_buffer_unmap(s->output, &s->output_map);
    gst_clear_buffer(&s->output);
  }
}

/* The engine throws away what a flush leaves behind through this. */
static void
discard_item(void *owner, const pp_item *item)
{
  GstCudaMlp *self = owner;
  if (item->kind == PP_ITEM_MARKER)
    gst_event_unref(item->user);
  else
    release_frame(&self->frames[item->ticket]);
}

static GstFlowReturn
get_srcresult(GstCudaMlp *self)
{
  GST_OBJECT_LOCK(self);
  const GstFlowReturn flow = self->srcresult;
  GST_OBJECT_UNLOCK(self);
  return flow;
}

static void
set_srcresult(GstCudaMlp *self, GstFlowReturn flow)
{
  GST_OBJECT_LOCK(self);
  self->srcresult = flow;
  GST_OBJECT_UNLOCK(self);
}

/* The stream stops for good: the chain returns `flow` upstream from now
 * on, a chain waiting for a slot is released, and the source task pushes
 * nothing more (the caller has posted the error). */
static void
stop_stream(GstCudaMlp *self, GstFlowReturn flow)
{
  set_srcresult(self, flow);
  pp_engine_set_flushing(self->engine, TRUE);
}

/* ---- stats -------------------------------------------------------------- */

/* "devices": each device's share, from its slots' (slot i runs on the i-th
 * device of the list mod its length). Caller holds the object lock. */
static void
add_device_stats_locked(GstCudaMlp *self, GstStructure *stats)
{
  pp_slot_stats slots[PP_MAX_SLOTS] = { 0 };
  if (self->engine)
    pp_engine_get_slot_stats(self->engine, slots);
  const pp_backend_options *devs = &self->active_devices;
  const guint n = MAX(devs->n_devices, 1);
  GValue array = G_VALUE_INIT;
  gst_value_array_init(&array, n);
  for (guint d = 0; d < n; d++) {
    pp_slot_stats sum = { 0 };
    guint count = 0;
    for (guint i = d; i < self->active_slots; i += n) {
      sum.frames += slots[i].frames;
      sum.latency_sum_us += slots[i].latency_sum_us;
      sum.timed_frames += slots[i].timed_frames;
      sum.mlp_sum_us += slots[i].mlp_sum_us;
      count++;
    }
    GValue entry = G_VALUE_INIT;
    g_value_init(&entry, GST_TYPE_STRUCTURE);
    g_value_take_boxed(
        &entry,
        gst_structure_new(
            "device", "id", G_TYPE_INT, pp_backend_slot_device(devs, d), "slots", G_TYPE_UINT,
            count, "frames", G_TYPE_UINT64, sum.frames, "latency-mean-us", G_TYPE_DOUBLE,
            sum.frames ? sum.latency_sum_us / sum.frames : 0.0, "mlp-mean-us", G_TYPE_DOUBLE,
            sum.timed_frames ? sum.mlp_sum_us / sum.timed_frames : -1.0, NULL));
    gst_value_array_append_and_take_value(&array, &entry);
  }
  gst_structure_take_value(stats, "devices", &array);
}

/* Caller holds the object lock, which guards the engine pointer against stop. */
static GstStructure *
build_stats_locked(GstCudaMlp *self)
{
  pp_stats stats = { 0 };
  const gchar *backend = "none", *detail = "";
  stats.h2d_mean_us = stats.mlp_mean_us = stats.d2h_mean_us = -1;
  if (!self->engine && self->last_stats)
    return gst_structure_copy(self->last_stats);
  if (self->engine) {
    pp_engine_get_stats(self->engine, &stats);
    backend = pp_engine_backend_name(self->engine);
    detail = pp_engine_backend_detail(self->engine);
  }
  GstStructure *s = gst_structure_new(
      "application/x-cudamlp-stats", "backend", G_TYPE_STRING, backend, "detail", G_TYPE_STRING,
      detail, "slots", G_TYPE_UINT, self->active_slots, "frames", G_TYPE_UINT64, stats.frames,
      "latency-mean-us", G_TYPE_DOUBLE, stats.latency_mean_us, "latency-p50-us", G_TYPE_DOUBLE,
      stats.latency_p50_us, "latency-p99-us", G_TYPE_DOUBLE, stats.latency_p99_us, "latency-max-us",
      G_TYPE_DOUBLE, stats.latency_max_us, "h2d-mean-us", G_TYPE_DOUBLE, stats.h2d_mean_us,
      "mlp-mean-us", G_TYPE_DOUBLE, stats.mlp_mean_us, "d2h-mean-us", G_TYPE_DOUBLE,
      stats.d2h_mean_us, "staged-inputs", G_TYPE_UINT64, stats.staged_inputs, "device-inputs",
      G_TYPE_UINT64, stats.device_inputs, "consumer-submits", G_TYPE_UINT64, stats.consumer_submits,
      "submit-mean-us", G_TYPE_DOUBLE, stats.submit_mean_us, "complete-mean-us", G_TYPE_DOUBLE,
      stats.complete_mean_us, "handoff-mean-us", G_TYPE_DOUBLE, stats.handoff_mean_us, NULL);
  add_device_stats_locked(self, s);
  return s;
}

static GstStructure *
build_stats(GstCudaMlp *self)
{
  GST_OBJECT_LOCK(self);
  GstStructure *stats = build_stats_locked(self);
  GST_OBJECT_UNLOCK(self);
  return stats;
}

static void
post_stats(GstCudaMlp *self)
{
  GstStructure *stats = build_stats(self);
  GST_INFO_OBJECT(self, "%" GST_PTR_FORMAT, stats);
  gst_element_post_message(GST_ELEMENT(self), gst_message_new_element(GST_OBJECT(self), stats));
  g_object_notify_by_pspec(G_OBJECT(self), properties[PROP_STATS]);
}

/* ---- start / stop ------------------------------------------------------- */

static gboolean
gst_cuda_mlp_start(GstCudaMlp *self)
{
  GST_OBJECT_LOCK(self);
  gchar *model_path = g_strdup(self->model_path);
  gchar *layers = g_strdup(self->layers);
  pp_backend_options options = self->backend_options;
  const pp_hidden_activation activation = self->hidden_activation;
  g_autofree gchar *device_error = g_strdup(self->device_error);
  self->active_slots = self->slots;
  options.completion = pp_completion_resolve(options.completion, self->active_slots);
  /* The backend runs in the pipeline's CUDA context, so the kernels can read
   * what NVDEC or cudaupload left in device memory (one device only: the
   * context is not made for a list). */
  options.cuda_context = pp_cuda_input_handle(self->cuda_context);
  g_autofree gchar *trace_path = gst_cuda_mlp_trace_path(self);
  options.time_every_frame = trace_path != NULL;
  GST_OBJECT_UNLOCK(self);

  if (device_error) {
    GST_ELEMENT_ERROR(self, RESOURCE, SETTINGS, ("Invalid device-id."), ("%s", device_error));
    g_free(model_path);
    g_free(layers);
    return FALSE;
  }
  pp_backend_resolve_devices(&options);
  if (options.n_devices > 1)
    options.cuda_context = NULL;
  gchar *msg = NULL, *note = NULL;
  if (model_path && *model_path &&
      pp_model_load(model_path, layers, activation, &self->file_model, &msg) < 0) {
    GST_ELEMENT_ERROR(self, RESOURCE, OPEN_READ, ("Cannot load the model '%s'.", model_path),
                      ("%s", msg));
    g_free(msg);
    g_free(model_path);
    g_free(layers);
    return FALSE;
  }
  g_free(model_path);
  g_free(layers);
  if (self->file_model && self->file_model->assumed)
    GST_ELEMENT_WARNING(self, RESOURCE, SETTINGS, ("Assumed the model's activations."),
                        ("%s", self->file_model->assumed));
  if (self->file_model) {
    g_autofree gchar *described = pp_model_describe(self->file_model);
    GST_INFO_OBJECT(self, "model %s: %s", self->file_model->source, described);
    GST_OBJECT_LOCK(self);
    self->file_inputs = self->file_model->k;
    GST_OBJECT_UNLOCK(self);
  }

  pp_backend *backend = NULL;
  if (pp_backend_open(&options, NULL, NULL, &backend, &note, &msg) < 0) {
    GST_ELEMENT_ERROR(self, RESOURCE, FAILED, ("Cannot start the compute backend."), ("%s", msg));
    g_free(msg);
    g_clear_pointer(&self->file_model, pp_model_free);
    GST_OBJECT_LOCK(self);
    self->file_inputs = 0;
    GST_OBJECT_UNLOCK(self);
    return FALSE;
  }
  if (note) {
    GST_ELEMENT_WARNING(self, RESOURCE, NOT_FOUND, ("No usable CUDA device; using the CPU."),
                        ("%s", note));
    g_free(note);
  }
  GST_OBJECT_LOCK(self);
  self->active_devices = options;
  self->engine = pp_engine_new(backend, discard_item, self);
  self->chained = 0;
  if (trace_path) {
    g_autofree gchar *process = g_strdup_printf("%s (host)", GST_OBJECT_NAME(self));
    self->trace = pp_trace_new(trace_path, process, gst_cuda_mlp_trace_capacity());
    pp_engine_set_trace(self->engine, self->trace);
  }
  GST_OBJECT_UNLOCK(self);
  self->pinned = g_str_equal(pp_engine_backend_name(self->engine), "cuda");
  self->allocator = gst_pp_pinned_allocator_new(self->pinned);
  /* An upstream element that allocates each frame from our allocator (not
   * from our pool) finds the block of a frame we finished; one per frame
   * in flight and one being filled, as the pool holds. */
  gst_pp_pinned_allocator_set_spare(self->allocator, self->active_slots * PP_TICKETS_PER_SLOT + 1);
  self->srcresult = GST_FLOW_FLUSHING;
  GST_INFO_OBJECT(self, "started the %s backend with %u slots in CUDA context %p",
                  pp_engine_backend_name(self->engine), self->active_slots, options.cuda_context);
  return TRUE;
}

static void
gst_cuda_mlp_stop(GstCudaMlp *self)
{
  /* The last figures stay readable once stopped. */
  GST_OBJECT_LOCK(self);
  if (self->engine) {
    g_clear_pointer(&self->last_stats, gst_structure_free);
    self->last_stats = build_stats_locked(self);
  }
  pp_engine *engine = self->engine;
  self->engine = NULL;
  GST_OBJECT_UNLOCK(self);
  /* Frees what is in flight exactly once, through discard_item. */
  g_clear_pointer(&engine, pp_engine_free);
  gst_cuda_mlp_close_trace(self);
  if (self->output_pool) {
    gst_buffer_pool_set_active(self->output_pool, FALSE);
    gst_clear_object(&self->output_pool);
  }
  gst_clear_object(&self->allocator);
  g_clear_pointer(&self->file_model, pp_model_free);
  GST_OBJECT_LOCK(self);
  self->file_inputs = 0;
  GST_OBJECT_UNLOCK(self);
  g_clear_pointer(&self->generated_model, pp_model_free);
  g_clear_pointer(&self->generated_key, g_free);
  gst_clear_caps(&self->refused_caps);
  self->downstream_eos = FALSE;
  self->model = NULL;
}

/* ---- the CUDA context shared with the pipeline --------------------------- */

/* The context, referenced for use outside the object lock, or NULL. */
static GstObject *
ref_cuda_context(GstCudaMlp *self)
{
  GST_OBJECT_LOCK(self);
  GstObject *ctx = self->cuda_context ? gst_object_ref(self->cuda_context) : NULL;
  GST_OBJECT_UNLOCK(self);
  return ctx;
}

/* True unless device-id spreads the slots over several devices: a frame in
 * one GPU's memory is read by that GPU alone. */
static gboolean
on_one_device(GstCudaMlp *self)
{
  GST_OBJECT_LOCK(self);
  pp_backend_options devices = self->backend_options;
  GST_OBJECT_UNLOCK(self);
  pp_backend_resolve_devices(&devices);
  return devices.n_devices <= 1;
}

/* Frames in CUDA memory need the GPU backend on one device: with
 * backend=cpu or a device list there is no context, and caps in CUDA
 * memory are not offered. */
static void
ensure_cuda_context(GstCudaMlp *self)
{
  GST_OBJECT_LOCK(self);
  const pp_backend_kind kind = self->backend_options.kind;
  const gint device = self->backend_options.device_id;
  GST_OBJECT_UNLOCK(self);
  GstObject *ctx = NULL;
  if (kind != PP_BACKEND_CPU && pp_backend_have_cuda() && on_one_device(self)) {
    ctx = ref_cuda_context(self);
    if (!pp_cuda_input_ensure_context(GST_ELEMENT(self), device, &ctx))
      GST_INFO_OBJECT(self, "no CUDA context: frames in CUDA memory are not taken");
  }
  GST_OBJECT_LOCK(self);
  gst_object_replace(&self->cuda_context, ctx);
  self->cuda_context_tried = TRUE;
  GST_OBJECT_UNLOCK(self);
  gst_clear_object(&ctx);
}

static void
gst_cuda_mlp_set_context(GstElement *element, GstContext *context)
{
  GstCudaMlp *self = GST_CUDA_MLP(element);
  GST_OBJECT_LOCK(self);
  const gint device = self->backend_options.device_id;
  GST_OBJECT_UNLOCK(self);
  GstObject *ctx = ref_cuda_context(self);
  pp_cuda_input_set_context(element, context, device, &ctx);
  GST_OBJECT_LOCK(self);
  gst_object_replace(&self->cuda_context, ctx);
  GST_OBJECT_UNLOCK(self);
  gst_clear_object(&ctx);
  GST_ELEMENT_CLASS(parent_class)->set_context(element, context);
}

static gboolean
handle_context_query(GstCudaMlp *self, GstQuery *query)
{
  GstObject *ctx = ref_cuda_context(self);
  const gboolean handled = pp_cuda_input_handle_query(GST_ELEMENT(self), query, ctx);
  gst_clear_object(&ctx);
  return handled;
}

/* Whether frames in CUDA memory can be read: a context and the GPU backend.
 * Before READY (gst-launch links elements in NULL) nothing is known yet:
 * yes if this build and the backend setting allow it. */
static gboolean
takes_cuda_memory(GstCudaMlp *self)
{
  GST_OBJECT_LOCK(self);
  gboolean ok;
  if (!self->cuda_context_tried)
    ok = pp_cuda_input_built() && pp_backend_have_cuda() &&
         self->backend_options.kind != PP_BACKEND_CPU;
  else
    ok = self->cuda_context &&
         (!self->engine || g_str_equal(pp_engine_backend_name(self->engine), "cuda"));
  GST_OBJECT_UNLOCK(self);
  return ok && on_one_device(self);
}

static GstStateChangeReturn
gst_cuda_mlp_change_state(GstElement *element, GstStateChange transition)
{
  GstCudaMlp *self = GST_CUDA_MLP(element);
  if (transition == GST_STATE_CHANGE_NULL_TO_READY)
    ensure_cuda_context(self);
  if (transition == GST_STATE_CHANGE_READY_TO_PAUSED && !gst_cuda_mlp_start(self))
    return GST_STATE_CHANGE_FAILURE;
  const GstStateChangeReturn ret =
      GST_ELEMENT_CLASS(parent_class)->change_state(element, transition);
  if (transition == GST_STATE_CHANGE_PAUSED_TO_READY ||
      (transition == GST_STATE_CHANGE_READY_TO_PAUSED && ret == GST_STATE_CHANGE_FAILURE))
    gst_cuda_mlp_stop(self);
  if (transition == GST_STATE_CHANGE_READY_TO_NULL) {
    GST_OBJECT_LOCK(self);
    gst_clear_object(&self->cuda_context);
    self->cuda_context_tried = FALSE;
    GST_OBJECT_UNLOCK(self);
  }
  return ret;
}

/* ---- caps --------------------------------------------------------------- */

/* What generated weights look like: the layers property when set (every
 * Linear with its widths), else hidden-sizes (or hidden-size) and outputs,
 * with hidden-activation between the layers and ReLU at the end. */
static gboolean
generated_desc(const gchar *layers, const gchar *sizes, guint k, guint d, guint o,
               pp_hidden_activation activation, pp_model_desc *desc, gchar **msg)
{
  if (layers && *layers) {
    gchar *reason = NULL;
    if (pp_model_desc_parse(layers, desc, &reason) == 0)
      return TRUE;
    *msg =
        g_strdup_printf("the layers property '%s' is not a valid description: %s", layers, reason);
    g_free(reason);
    return FALSE;
  }
  g_auto(GStrv) widths = g_strsplit(sizes && *sizes ? sizes : "", ",", -1);
  const guint n_hidden = MAX(g_strv_length(widths), 1);
  if (n_hidden + 1 > PP_MAX_LAYERS) {
    *msg = g_strdup_printf("hidden-sizes '%s' asks for %u Linear layers; at most %d are supported",
                           sizes, n_hidden + 1, PP_MAX_LAYERS);
    return FALSE;
  }
  const pp_act between = { activation == PP_HIDDEN_RELU ? PP_ACT_RELU : PP_ACT_IDENTITY, 0.0f };
  *desc = (pp_model_desc){ .n_linear = n_hidden + 1 };
  guint in = k;
  for (guint i = 0; i <= n_hidden; i++) {
    guint64 out = i == n_hidden ? o : d; /* no hidden-sizes: the seed's hidden-size */
    if (i < n_hidden && widths[0] &&
        !g_ascii_string_to_unsigned(g_strstrip(widths[i]), 10, 1, 1u << 24, &out, NULL)) {
      *msg = g_strdup_printf("hidden-sizes '%s': '%s' is not a width of 1..%u", sizes, widths[i],
                             1u << 24);
      return FALSE;
    }
    desc->linear[i] = (pp_desc_linear){ .has_dims = TRUE, .in = in, .out = out, .act = between };
    in = (guint) out;
  }
  desc->linear[n_hidden].act = (pp_act){ PP_ACT_RELU, 0.0f };
  return TRUE;
}

static const pp_model *
model_for(GstCudaMlp *self, guint k, gchar **msg)
{
  if (self->file_model)
    return pp_model_check_inputs(self->file_model, k, msg) == 0 ? self->file_model : NULL;

  GST_OBJECT_LOCK(self);
  const guint d = self->hidden_size, o = self->outputs;
  const pp_hidden_activation activation = self->hidden_activation;
  g_autofree gchar *layers = g_strdup(self->layers);
  g_autofree gchar *sizes = g_strdup(self->hidden_sizes);
  GST_OBJECT_UNLOCK(self);
  g_autofree gchar *key = g_strdup_printf("%u|%u|%u|%d|%s|%s", k, d, o, activation,
                                          layers ? layers : "", sizes ? sizes : "");
  if (self->generated_model && g_strcmp0(key, self->generated_key) == 0)
    return self->generated_model;
  g_clear_pointer(&self->generated_model, pp_model_free);
  g_clear_pointer(&self->generated_key, g_free);
  pp_model_desc desc;
  if (!generated_desc(layers, sizes, k, d, o, activation, &desc, msg) ||
      pp_model_generate_desc(k, &desc, &self->generated_model, msg) < 0)
    return NULL;
  self->generated_key = g_steal_pointer(&key);
  return self->generated_model;
}

static gboolean
make_output_pool(GstCudaMlp *self, const pp_model *model)
{
  if (self->output_pool) {
    gst_buffer_pool_set_active(self->output_pool, FALSE);
    gst_clear_object(&self->output_pool);
  }
  const guint size = self->layout.n * model->o * sizeof(float);
  /* At least one buffer per slot, and as many more as downstream holds. */
  self->output_pool = gst_pp_pinned_pool_new(self->allocator, NULL, size, self->active_slots, 0);
  return self->output_pool && gst_buffer_pool_set_active(self->output_pool, TRUE);
}

/* What set_caps made of a caps event: taken, refused (the frames do not
 * fit the element's settings or model), or a failure of the backend that
 * stops the stream. Either failure has been posted as an element error. */
typedef enum {
  CAPS_TAKEN,
  CAPS_REFUSED,
  CAPS_FAILED,
} caps_outcome;

static caps_outcome
gst_cuda_mlp_set_caps(GstCudaMlp *self, GstCaps *caps)
{
  GST_OBJECT_LOCK(self);
  const pp_mapping mapping = self->mapping;
  const guint patch = self->patch_size;
  const pp_color color = self->color;
  GST_OBJECT_UNLOCK(self);

  pp_frame_layout layout;
  gint fps_n, fps_d;
  gchar *msg = NULL;
  const pp_model *model = NULL;
  const gboolean device_input = pp_caps_are_cuda_memory(caps);
  if (device_input && !takes_cuda_memory(self))
    msg = g_strdup("frames in CUDA memory need backend=cuda and a GPU");
  if (msg || !pp_caps_to_layout(caps, mapping, patch, color, &layout, &fps_n, &fps_d, &msg) ||
      !(model = model_for(self, layout.k, &msg))) {
    GST_ELEMENT_ERROR(self, CORE, NEGOTIATION, ("Cannot process frames of these caps."),
                      ("%s (caps %" GST_PTR_FORMAT ")", msg, caps));
    g_free(msg);
    return CAPS_REFUSED;
  }
  /* Frames of the old caps finish first: the slots are resized below. */
  if (pp_engine_is_configured(self->engine) && pp_engine_drain(self->engine) < 0)
    return CAPS_FAILED;
  if (pp_engine_configure(self->engine, model, &layout, self->active_slots, &msg) < 0) {
    GST_ELEMENT_ERROR(self, RESOURCE, FAILED, ("Cannot set up the compute backend."), ("%s", msg));
    g_free(msg);
    return CAPS_FAILED;
  }
  self->layout = layout;
  self->model = model;
  if (!make_output_pool(self, model)) {
    GST_ELEMENT_ERROR(self, RESOURCE, NO_SPACE_LEFT, ("Cannot allocate output buffers."), (NULL));
    return CAPS_FAILED;
  }
  self->frame_duration =
      fps_n > 0 ? gst_util_uint64_scale_int(GST_SECOND, fps_d, fps_n) : GST_CLOCK_TIME_NONE;
  g_autofree gchar *described = pp_model_describe(model);
  GST_INFO_OBJECT(self, "X is %u×%u, model %s (%s), %zu bytes per frame", layout.n, layout.k,
                  described, model->source, layout.frame_bytes);

  self->frames_out = gst_cuda_mlp_frames_out(self);
  GST_INFO_OBJECT(self, "pushing %s", self->frames_out ? "frames with scores" : "tensors");
  GstCaps *out_caps = self->frames_out ? gst_caps_copy(caps)
                                       : pp_caps_for_outputs(model->o, layout.n, fps_n, fps_d);
  const int rc = pp_engine_push_marker(self->engine, gst_event_new_caps(out_caps));
  gst_caps_unref(out_caps);
  return rc == 0 ? CAPS_TAKEN : CAPS_FAILED;
}

/* ---- streaming ---------------------------------------------------------- */

/* Maps a frame and its output buffer into `s` and fills the job's pointers;
 * takes both buffers either way (freed on failure, with the error posted). */
static GstFlowReturn
map_frame(GstCudaMlp *self, GstCudaMlpFrame *s, GstBuffer *buffer, GstBuffer *output, pp_job *job)
{
  gchar *msg = NULL;
  pp_cuda_input_where where = PP_CUDA_INPUT_HOST;
  if (pp_cuda_input_is_device(buffer)) {
    GstObject *ctx = ref_cuda_context(self);
    where = pp_cuda_input_map(buffer, ctx, &self->layout, &s->input_map, job, &msg);
    gst_clear_object(&ctx);
    if (where == PP_CUDA_INPUT_ERROR) {
      GST_ELEMENT_ERROR(self, STREAM, FAILED, ("Cannot read a frame in CUDA memory."), ("%s", msg));
      g_free(msg);
      gst_buffer_unref(buffer);
      gst_buffer_unref(output);
      return GST_FLOW_ERROR;
    }
  }
  if (where == PP_CUDA_INPUT_HOST && !gst_buffer_map(buffer, &s->input_map, GST_MAP_READ)) {
    GST_ELEMENT_ERROR(self, RESOURCE, READ, (NULL), ("Cannot map an input buffer."));
    gst_buffer_unref(buffer);
    gst_buffer_unref(output);
    return GST_FLOW_ERROR;
  }
  s->input = buffer;
  if (!gst_buffer_map(output, &s->output_map, GST_MAP_WRITE)) {
    GST_ELEMENT_ERROR(self, RESOURCE, WRITE, (NULL), ("Cannot map an output buffer."));
    release_frame(s);
    gst_buffer_unref(output);
    return GST_FLOW_ERROR;
  }
  s->output = output;
  if (where == PP_CUDA_INPUT_HOST) {
    job->input = s->input_map.data;
    job->input_pinned = self->pinned && gst_pp_buffer_is_pinned(buffer);
  }
  job->output = (float *) s->output_map.data;
  return GST_FLOW_OK;
}

static GstFlowReturn
gst_cuda_mlp_chain(GstPad *pad, GstObject *parent, GstBuffer *buffer)
{
  GstCudaMlp *self = GST_CUDA_MLP(parent);
  const gint64 entered = self->trace ? pp_now_ns() : 0;
  GstFlowReturn flow = get_srcresult(self);
  GstBuffer *output = NULL;
  gchar *msg = NULL;
  unsigned ticket;
  (void) pad;

  if (flow != GST_FLOW_OK)
    goto drop; /* EOS downstream, refused caps, an error: said once already */
  if (!pp_engine_is_configured(self->engine) || !self->output_pool) {
    GST_ELEMENT_ERROR(self, CORE, NEGOTIATION, (NULL), ("Got a buffer before any caps."));
    set_srcresult(self, GST_FLOW_NOT_NEGOTIATED);
    flow = GST_FLOW_NOT_NEGOTIATED;
    goto drop;
  }
  const gsize size = gst_buffer_get_size(buffer);
  if (size < self->layout.frame_bytes) {
    GST_ELEMENT_ERROR(self, STREAM, FORMAT, ("A frame buffer is smaller than its caps say."),
                      ("buffer of %" G_GSIZE_FORMAT " bytes; the caps need %zu per frame", size,
                       self->layout.frame_bytes));
    flow = GST_FLOW_ERROR;
    stop_stream(self, flow);
    goto drop;
  }
  if (pp_engine_acquire(self->engine, &ticket) < 0) {
    flow = get_srcresult(self);
    goto drop;
  }
  flow = gst_buffer_pool_acquire_buffer(self->output_pool, &output, NULL);
  if (flow != GST_FLOW_OK)
    goto drop;

  GstCudaMlpFrame *s = &self->frames[ticket];
  pp_job job = { .output_pinned = self->pinned };
  flow = map_frame(self, s, buffer, output, &job);
  if (flow != GST_FLOW_OK) {
    stop_stream(self, flow);
    return flow;
  }
  const int rc = pp_engine_submit(self->engine, ticket, &job, s, &msg);
  if (rc < 0) {
    release_frame(s);
    if (rc == -ECANCELED)
      return get_srcresult(self);
    GST_ELEMENT_ERROR(self, RESOURCE, FAILED, ("Cannot queue a frame."), ("%s", msg));
    g_free(msg);
    stop_stream(self, GST_FLOW_ERROR);
    return GST_FLOW_ERROR;
  }
  pp_trace_host(self->trace, "chain", entered, pp_now_ns(), (gint64) self->chained++);
  return GST_FLOW_OK;

drop:
  gst_buffer_unref(buffer);
  return flow;
}

/* output=video-meta: the frame, made writable (metadata only: its memory
 * is shared), with its results attached; takes both references. */
static GstBuffer *
attach_scores(GstCudaMlp *self, GstBuffer *frame, GstBuffer *scores)
{
  const pp_frame_layout *l = &self->layout;
  GstPpScoresLayout kind = GST_PP_SCORES_TENSOR;
  guint grid_width = 1, grid_height = l->n;
  if (l->kind == PP_LAYOUT_ROWS) {
    kind = GST_PP_SCORES_ROWS;
  } else if (l->kind == PP_LAYOUT_PATCHES) {
    kind = GST_PP_SCORES_PATCHES;
    grid_width = l->patches_per_row;
    grid_height = l->n / l->patches_per_row;
  }
  frame = gst_buffer_make_writable(frame);
  gst_buffer_add_pp_scores_meta(frame, scores, l->n, self->model->o, kind, l->patch, grid_width,
                                grid_height);
  gst_buffer_unref(scores);
  return frame;
}

/* A frame's result downstream: its tensors with the frame's timestamps, or
 * the frame itself carrying them. Takes both buffers. */
static GstFlowReturn
push_result(GstCudaMlp *self, const pp_item *item, GstBuffer *input, GstBuffer *output)
{
  const gint64 start = self->trace ? pp_now_ns() : 0;
  GstFlowReturn flow;
  if (self->frames_out) {
    flow = gst_pad_push(self->srcpad, attach_scores(self, input, output));
  } else {
    gst_buffer_copy_into(output, input, GST_BUFFER_COPY_FLAGS | GST_BUFFER_COPY_TIMESTAMPS, 0, -1);
    gst_buffer_unref(input);
    flow = gst_pad_push(self->srcpad, output);
  }
  pp_trace_host(self->trace, "push", start, pp_now_ns(), (gint64) item->seq);
  return flow;
}

/* Downstream's answer to a push. EOS: downstream wants no more frames, but
 * the events behind them (upstream's EOS above all) still go on, so the
 * task keeps running and drops frames; the chain returns EOS upstream.
 * FLUSHING: a flush or a state change is under way. Anything else stops
 * the stream with an error, as GStreamer's elements do. */
static void
handle_push_result(GstCudaMlp *self, GstFlowReturn flow)
{
  if (flow == GST_FLOW_OK)
    return;
  if (flow == GST_FLOW_EOS) {
    GST_DEBUG_OBJECT(self, "downstream returned EOS: dropping frames until a new segment");
    self->downstream_eos = TRUE;
    GST_OBJECT_LOCK(self);
    if (self->srcresult == GST_FLOW_OK)
      self->srcresult = GST_FLOW_EOS;
    GST_OBJECT_UNLOCK(self);
    return;
  }
  GST_DEBUG_OBJECT(self, "pausing: %s", gst_flow_get_name(flow));
  if (flow != GST_FLOW_FLUSHING)
    GST_ELEMENT_FLOW_ERROR(self, flow);
  stop_stream(self, flow);
  gst_pad_pause_task(self->srcpad);
}

static void
push_marker(GstCudaMlp *self, GstEvent *event)
{
  switch (GST_EVENT_TYPE(event)) {
    case GST_EVENT_STREAM_START:
    case GST_EVENT_SEGMENT:
      /* A new stream or segment: downstream may take frames again. */
      self->downstream_eos = FALSE;
      break;
    case GST_EVENT_EOS:
      post_stats(self);
      break;
    default:
      break;
  }
  gst_pad_push_event(self->srcpad, event);
}

/* Pushes one result, or one event, per call: strictly in the order the
 * frames and events came in. */
static void
gst_cuda_mlp_loop(GstPad *pad)
{
  GstCudaMlp *self = GST_CUDA_MLP(GST_PAD_PARENT(pad));
  pp_item item;

  if (pp_engine_pop(self->engine, &item) < 0) {
    gst_pad_pause_task(pad);
    return;
  }
  if (item.kind == PP_ITEM_MARKER) {
    push_marker(self, item.user);
    return;
  }

  GstCudaMlpFrame *s = &self->frames[item.ticket];
  GstBuffer *input = s->input, *output = s->output;
  gst_buffer_unmap(input, &s->input_map);
  gst_buffer_unmap(output, &s->output_map);
  s->input = s->output = NULL;
  pp_engine_release(self->engine, item.ticket);

  if (item.status < 0) {
    GST_ELEMENT_ERROR(self, RESOURCE, FAILED, ("Processing a frame failed."),
                      ("%s backend: %s", pp_engine_backend_name(self->engine), item.message));
    gst_buffer_unref(input);
    gst_buffer_unref(output);
    stop_stream(self, GST_FLOW_ERROR);
    gst_pad_pause_task(pad);
    return;
  }
  if (self->downstream_eos) {
    gst_buffer_unref(input);
    gst_buffer_unref(output);
    return;
  }
  handle_push_result(self, push_result(self, &item, input, output));
}

static gboolean
gst_cuda_mlp_src_activate_mode(GstPad *pad, GstObject *parent, GstPadMode mode, gboolean active)
{
  GstCudaMlp *self = GST_CUDA_MLP(parent);
  if (mode != GST_PAD_MODE_PUSH)
    return FALSE;
  if (active) {
    self->downstream_eos = FALSE;
    set_srcresult(self, GST_FLOW_OK);
    pp_engine_set_flushing(self->engine, FALSE);
    return gst_pad_start_task(pad, (GstTaskFunction) gst_cuda_mlp_loop, pad, NULL);
  }
  set_srcresult(self, GST_FLOW_FLUSHING);
  pp_engine_set_flushing(self->engine, TRUE);
  return gst_pad_stop_task(pad);
}

static gboolean
gst_cuda_mlp_sink_activate_mode(GstPad *pad, GstObject *parent, GstPadMode mode, gboolean active)
{
  GstCudaMlp *self = GST_CUDA_MLP(parent);
  (void) pad;
  if (mode != GST_PAD_MODE_PUSH)
    return FALSE;
  /* A chain waiting for a slot must return before the pad can deactivate. */
  if (!active && self->engine)
    pp_engine_set_flushing(self->engine, TRUE);
  return TRUE;
}

/* A caps event: refused caps are said once (a sticky caps event comes
 * again before every buffer), and the chain then returns NOT_NEGOTIATED
 * until caps that fit arrive. */
static gboolean
handle_caps_event(GstCudaMlp *self, GstEvent *event)
{
  GstCaps *caps;
  gst_event_parse_caps(event, &caps);
  gboolean taken = FALSE;
  if (self->refused_caps && gst_caps_is_equal(caps, self->refused_caps)) {
    GST_DEBUG_OBJECT(self, "refused these caps already");
  } else {
    switch (gst_cuda_mlp_set_caps(self, caps)) {
      case CAPS_TAKEN:
        gst_clear_caps(&self->refused_caps);
        taken = TRUE;
        break;
      case CAPS_REFUSED:
        gst_caps_replace(&self->refused_caps, caps);
        set_srcresult(self, GST_FLOW_NOT_NEGOTIATED);
        break;
      case CAPS_FAILED:
        stop_stream(self, GST_FLOW_ERROR);
        break;
    }
  }
  GST_OBJECT_LOCK(self);
  if (taken && self->srcresult == GST_FLOW_NOT_NEGOTIATED)
    self->srcresult = GST_FLOW_OK;
  GST_OBJECT_UNLOCK(self);
  gst_event_unref(event);
  return taken;
}

static gboolean
gst_cuda_mlp_sink_event(GstPad *pad, GstObject *parent, GstEvent *event)
{
  GstCudaMlp *self = GST_CUDA_MLP(parent);
  gboolean ret;

  if (!self->engine)
    return gst_pad_event_default(pad, parent, event);
  switch (GST_EVENT_TYPE(event)) {
    case GST_EVENT_FLUSH_START:
      pp_engine_set_flushing(self->engine, TRUE);
      set_srcresult(self, GST_FLOW_FLUSHING);
      ret = gst_pad_push_event(self->srcpad, event);
      gst_pad_pause_task(self->srcpad);
      return ret;
    case GST_EVENT_FLUSH_STOP:
      /* In-flight frames finish on the backend and are dropped. The task is
       * paused here, so it is safe to touch what it owns. */
      pp_engine_flush(self->engine);
      pp_engine_set_flushing(self->engine, FALSE);
      self->downstream_eos = FALSE;
      set_srcresult(self, GST_FLOW_OK);
      ret = gst_pad_push_event(self->srcpad, event);
      gst_pad_start_task(self->srcpad, (GstTaskFunction) gst_cuda_mlp_loop, self->srcpad, NULL);
      return ret;
    case GST_EVENT_CAPS:
      return handle_caps_event(self, event);
    default:
      break;
  }
  if (!GST_EVENT_IS_SERIALIZED(event))
    return gst_pad_event_default(pad, parent, event);

  GST_OBJECT_LOCK(self);
  const GstFlowReturn flow = self->srcresult;
  /* A new stream or segment may be wanted again after downstream's EOS. */
  if (flow == GST_FLOW_EOS && (GST_EVENT_TYPE(event) == GST_EVENT_STREAM_START ||
                               GST_EVENT_TYPE(event) == GST_EVENT_SEGMENT))
    self->srcresult = GST_FLOW_OK;
  GST_OBJECT_UNLOCK(self);
  /* After an error nothing more goes downstream; after downstream's EOS
   * the events still do, in order behind the frames. */
  if (flow != GST_FLOW_OK && flow != GST_FLOW_EOS) {
    GST_DEBUG_OBJECT(self, "dropping %" GST_PTR_FORMAT ": %s", event, gst_flow_get_name(flow));
    gst_event_unref(event);
    return FALSE;
  }
  /* Serialized events leave in order with the frames around them. */
  if (pp_engine_push_marker(self->engine, event) < 0) {
    gst_event_unref(event);
    return FALSE;
  }
  return TRUE;
}

static gboolean
propose_allocation(GstCudaMlp *self, GstQuery *query)
{
  GstCaps *caps;
  gboolean need_pool;
  gst_query_parse_allocation(query, &caps, &need_pool);
  if (!caps || !self->allocator)
    return FALSE;

  GST_OBJECT_LOCK(self);
  const pp_mapping mapping = self->mapping;
  const guint patch = self->patch_size;
  GST_OBJECT_UNLOCK(self);
  GstObject *ctx = ref_cuda_context(self);
  pp_frame_layout layout;
  gint fps_n, fps_d;
  g_autofree gchar *msg = NULL;
  /* RGB: the size of a whole frame whatever the model reads of it. */
  if (!pp_caps_to_layout(caps, mapping, patch, PP_COLOR_RGB, &layout, &fps_n, &fps_d, &msg)) {
    gst_clear_object(&ctx);
    return FALSE;
  }

  /* Enough buffers for every frame in flight plus one being filled upstream. */
  const guint min_buffers = self->active_slots * PP_TICKETS_PER_SLOT + 1;
  GstBufferPool *pool = NULL;
  if (pp_caps_are_cuda_memory(caps)) {
    /* Device memory in our context for cudaupload; frames keep their own
     * strides (video meta). */
    if (need_pool && ctx)
      pool = pp_cuda_input_pool(ctx, caps, layout.frame_bytes, min_buffers);
    gst_clear_object(&ctx);
    gst_query_add_allocation_pool(query, pool, layout.frame_bytes, min_buffers, 0);
    gst_query_add_allocation_meta(query, GST_VIDEO_META_API_TYPE, NULL);
    if (pool)
      gst_object_unref(pool);
    return TRUE;
  }
  gst_clear_object(&ctx);
  if (need_pool)
    pool = gst_pp_pinned_pool_new(self->allocator, caps, layout.frame_bytes, min_buffers, 0);
  gst_query_add_allocation_pool(query, pool, layout.frame_bytes, min_buffers, 0);
  if (pool)
    gst_object_unref(pool);
  GstAllocationParams params;
  gst_allocation_params_init(&params);
  params.align = 4095;
  gst_query_add_allocation_param(query, self->allocator, &params);
  return TRUE;
}

static gboolean
gst_cuda_mlp_sink_query(GstPad *pad, GstObject *parent, GstQuery *query)
{
  GstCudaMlp *self = GST_CUDA_MLP(parent);
  switch (GST_QUERY_TYPE(query)) {
    case GST_QUERY_ALLOCATION:
      return propose_allocation(self, query);
    case GST_QUERY_CONTEXT:
      if (handle_context_query(self, query))
        return TRUE;
      break;
    case GST_QUERY_ACCEPT_CAPS:
      return gst_cuda_mlp_accept_caps(self, query, takes_cuda_memory(self));
    case GST_QUERY_CAPS:
      return gst_cuda_mlp_sink_caps_query(self, query, takes_cuda_memory(self));
    default:
      break;
  }
  return gst_pad_query_default(pad, parent, query);
}

static gboolean
gst_cuda_mlp_src_query(GstPad *pad, GstObject *parent, GstQuery *query)
{
  GstCudaMlp *self = GST_CUDA_MLP(parent);
  if (GST_QUERY_TYPE(query) == GST_QUERY_CONTEXT && handle_context_query(self, query))
    return TRUE;
  if (GST_QUERY_TYPE(query) == GST_QUERY_CAPS)
    return gst_cuda_mlp_src_caps_query(self, query, takes_cuda_memory(self));
  if (GST_QUERY_TYPE(query) != GST_QUERY_LATENCY)
    return gst_pad_query_default(pad, parent, query);

  if (!gst_pad_peer_query(self->sinkpad, query))
    return FALSE;
  gboolean live;
  GstClockTime min, max;
  gst_query_parse_latency(query, &live, &min, &max);
  /* A result leaves once its frame is computed: within one frame period
   * when keeping up, and at most as many periods behind as frames can be in
   * flight when saturated. */
  const GstClockTime period = self->frame_duration;
  if (GST_CLOCK_TIME_IS_VALID(period)) {
    min += period;
    if (GST_CLOCK_TIME_IS_VALID(max))
      max += period * self->active_slots * PP_TICKETS_PER_SLOT;
  } else {
    max = GST_CLOCK_TIME_NONE;
  }
  GST_DEBUG_OBJECT(self, "latency min %" GST_TIME_FORMAT " max %" GST_TIME_FORMAT,
                   GST_TIME_ARGS(min), GST_TIME_ARGS(max));
  gst_query_set_latency(query, live, min, max);
  return TRUE;
}

/* ---- GObject ------------------------------------------------------------ */

static void
gst_cuda_mlp_get_property(GObject *object, guint prop_id, GValue *value, GParamSpec *pspec)
{
  GstCudaMlp *self = GST_CUDA_MLP(object);
  if (prop_id == PROP_STATS)
    g_value_take_boxed(value, build_stats(self));
  else
    gst_cuda_mlp_get_config(self, prop_id, value, pspec);
}

static void
gst_cuda_mlp_finalize(GObject *object)
{
  GstCudaMlp *self = GST_CUDA_MLP(object);
  g_free(self->model_path);
  g_free(self->layers);
  g_free(self->hidden_sizes);
  g_free(self->device_ids);
  g_free(self->device_error);
  g_clear_pointer(&self->last_stats, gst_structure_free);
  gst_clear_object(&self->cuda_context);
  G_OBJECT_CLASS(parent_class)->finalize(object);
}

static void
gst_cuda_mlp_class_init(GstCudaMlpClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS(klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS(klass);

  object_class->set_property = gst_cuda_mlp_set_config;
  object_class->get_property = gst_cuda_mlp_get_property;
  object_class->finalize = gst_cuda_mlp_finalize;

  gst_cuda_mlp_install_properties(object_class, properties);

  gst_element_class_add_static_pad_template(element_class, &sink_template);
  gst_element_class_add_static_pad_template(element_class, &src_template);
  gst_element_class_set_static_metadata(
      element_class, "CUDA MLP", "Filter/Converter/Video",
      "Runs a multi-layer perceptron (an nn.Sequential of Linear layers and activations) on every "
      "frame with several frames in flight on the GPU",
      "pingpong developers");
  element_class->change_state = GST_DEBUG_FUNCPTR(gst_cuda_mlp_change_state);
  element_class->set_context = GST_DEBUG_FUNCPTR(gst_cuda_mlp_set_context);

  GST_DEBUG_CATEGORY_INIT(gst_cuda_mlp_debug, "cudamlp", 0, "pingpong CUDA MLP element");
  gst_type_mark_as_plugin_api(GST_TYPE_CUDA_MLP_MAPPING, 0);
  gst_type_mark_as_plugin_api(GST_TYPE_CUDA_MLP_BACKEND, 0);
  gst_type_mark_as_plugin_api(GST_TYPE_CUDA_MLP_ACTIVATION, 0);
  gst_type_mark_as_plugin_api(GST_TYPE_CUDA_MLP_PRECISION, 0);
  gst_type_mark_as_plugin_api(GST_TYPE_CUDA_MLP_COMPLETION, 0);
  gst_type_mark_as_plugin_api(GST_TYPE_CUDA_MLP_COLOR, 0);
}

static void
gst_cuda_mlp_init(GstCudaMlp *self)
{
  self->sinkpad = gst_pad_new_from_static_template(&sink_template, "sink");
  gst_pad_set_chain_function(self->sinkpad, GST_DEBUG_FUNCPTR(gst_cuda_mlp_chain));
  gst_pad_set_event_function(self->sinkpad, GST_DEBUG_FUNCPTR(gst_cuda_mlp_sink_event));
  gst_pad_set_query_function(self->sinkpad, GST_DEBUG_FUNCPTR(gst_cuda_mlp_sink_query));
  gst_pad_set_activatemode_function(self->sinkpad,
                                    GST_DEBUG_FUNCPTR(gst_cuda_mlp_sink_activate_mode));
  gst_element_add_pad(GST_ELEMENT(self), self->sinkpad);

  self->srcpad = gst_pad_new_from_static_template(&src_template, "src");
  gst_pad_set_query_function(self->srcpad, GST_DEBUG_FUNCPTR(gst_cuda_mlp_src_query));
  gst_pad_set_activatemode_function(self->srcpad,
                                    GST_DEBUG_FUNCPTR(gst_cuda_mlp_src_activate_mode));
  gst_pad_use_fixed_caps(self->srcpad);
  gst_element_add_pad(GST_ELEMENT(self), self->srcpad);

  gst_cuda_mlp_init_config(self);
  self->srcresult = GST_FLOW_FLUSHING;
  self->frame_duration = GST_CLOCK_TIME_NONE;
}
