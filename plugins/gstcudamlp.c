/* SPDX-License-Identifier: LGPL-2.1-or-later */
/**
 * SECTION:element-cudamlp
 * @title: cudamlp
 *
 * Runs a multi-layer perceptron (an nn.Sequential of 1 to 8 Linear layers
 * and their activations) on every frame, on an NVIDIA GPU (or the CPU),
 * with several frames in flight: frame i goes to slot i mod N, each slot
 * with its own pinned host memory and CUDA stream, so uploads, compute and
 * downloads of successive frames overlap. The chain function returns as
 * soon as the frame is queued; a task on the source pad pushes each result,
 * in order, with the frame's timestamps, when it completes.
 *
 * Each frame becomes an N×K matrix X (see #GstCudaMlp:mapping); the output
 * is one other/tensors float32 buffer of the model's N×O outputs per frame,
 * or (#GstCudaMlp:output) the frame itself carrying them.
 *
 * ## Example launch line
 * |[
 * gst-launch-1.0 videotestsrc num-buffers=300 ! video/x-raw,format=GRAY8,width=1024,height=1024 ! cudamlp ! fakesink
 * ]|
 */
#include "gstcudamlp.h"

#include "backend_shared.h"
#include "cudainput.h"
#include "cudamlpcontext.h"
#include "cudamlpenums.h"
#include "cudamlpmodel.h"
#include "cudamlppreload.h"
#include "cudamlpprops.h"
#include "cudamlpstats.h"
#include "cudamlppads.h"
#include "cudamlpstream.h"
#include "cudamlptrace.h"
#include "debug_env.h"
#include "gstpinnedallocator.h"
#include "tensorcaps.h"

GST_DEBUG_CATEGORY(gst_cuda_mlp_debug);
#define GST_CAT_DEFAULT gst_cuda_mlp_debug

static GstStaticPadTemplate sink_template =
    GST_STATIC_PAD_TEMPLATE("sink", GST_PAD_SINK, GST_PAD_ALWAYS, GST_STATIC_CAPS(PP_SINK_CAPS));
static GstStaticPadTemplate src_template =
    GST_STATIC_PAD_TEMPLATE("src", GST_PAD_SRC, GST_PAD_ALWAYS,
                            GST_STATIC_CAPS(PP_SRC_CAPS "; " PP_SINK_CAPS)); /* output=video-meta */

#define gst_cuda_mlp_parent_class parent_class
G_DEFINE_TYPE(GstCudaMlp, gst_cuda_mlp, GST_TYPE_ELEMENT);
GST_ELEMENT_REGISTER_DEFINE(cudamlp, "cudamlp", GST_RANK_NONE, GST_TYPE_CUDA_MLP);

/* ---- start / stop -------------------------------------------------------- */

/* The backend's options as the properties and the pipeline's CUDA context
 * have them; FALSE with the error posted. */
static gboolean
backend_options(GstCudaMlp *self, pp_backend_options *options, gboolean *prewake, gboolean *shared)
{
  GST_OBJECT_LOCK(self);
  *options = self->settings.backend;
  g_autofree gchar *device_error = g_strdup(self->settings.device_error);
  *prewake = self->settings.prewake;
  *shared = self->settings.shared;
  self->active_slots = self->settings.slots;
  GST_OBJECT_UNLOCK(self);
  if (device_error) {
    GST_ELEMENT_ERROR(self, RESOURCE, SETTINGS, ("Invalid device-id: %s.", device_error),
                      ("%s", device_error));
    return FALSE;
  }
  options->completion = pp_completion_resolve(options->completion);
  const int64_t fail_at = pp_debug_env_read().cpu_fail_at;
  options->fail_frame = fail_at >= 0 ? (uint64_t) fail_at + 1 : 0;
  pp_backend_resolve_devices(options);
  /* The backend runs in the pipeline's CUDA context, so the kernels can read
   * what NVDEC or cudaupload left in device memory (one device only). */
  GstObject *ctx = gst_cuda_mlp_context_ref(self);
  options->cuda_context = options->n_devices > 1 ? NULL : pp_cuda_input_handle(ctx);
  gst_clear_object(&ctx);
  return TRUE;
}

static gboolean
gst_cuda_mlp_start(GstCudaMlp *self)
{
  pp_backend_options options;
  gboolean prewake, shared;
  g_autofree gchar *trace_path = gst_cuda_mlp_trace_path(self);
  if (!backend_options(self, &options, &prewake, &shared) || !gst_cuda_mlp_model_start(self))
    return FALSE;
  options.time_every_frame = trace_path != NULL;
  /* precision=auto: as the model file keeps its weights, with no round trip
   * of a bf16 file through other roundings. */
  if (options.precision == GST_CUDA_MLP_PRECISION_AUTO)
    options.precision = pp_precision_for_stored(gst_cuda_mlp_model_stored(self));
  pp_backend *backend = NULL;
  gchar *msg = NULL, *note = NULL;
  if (!shared && options.max_batch > 1)
    GST_ELEMENT_WARNING(self, RESOURCE, SETTINGS,
                        ("max-batch=%u does nothing without shared=true: frames run one at a time.",
                         options.max_batch),
                        ("batches are of the frames of the streams sharing one backend"));
  /* A shared backend reports through its own completion thread. */
  if (shared)
    options.completion = PP_COMPLETION_EVENT_THREAD;
  const int rc = shared ? pp_backend_open_shared(&options, &backend, &note, &msg)
                        : pp_backend_open(&options, NULL, NULL, &backend, &note, &msg);
  if (rc < 0) {
    GST_ELEMENT_ERROR(self, RESOURCE, FAILED, ("Cannot start the compute backend: %s.", msg),
                      ("%s", msg));
    g_clear_pointer(&msg, g_free);
    return FALSE;
  }
  if (note) {
    GST_ELEMENT_WARNING(self, RESOURCE, NOT_FOUND, ("No usable CUDA device; using the CPU."),
                        ("%s", note));
    g_free(note);
  }
  pp_engine *engine = pp_engine_new(backend, gst_cuda_mlp_discard_item, self);
  pp_engine_set_prewake(engine, prewake);
  GST_OBJECT_LOCK(self);
  self->active_devices = options;
  self->engine = engine;
  self->chained = 0;
  self->plan_warned = FALSE;
  GST_OBJECT_UNLOCK(self);
  gst_cuda_mlp_open_trace(self, trace_path);
  self->pinned = g_str_equal(pp_engine_backend_name(engine), "cuda");
  self->allocator = gst_pp_pinned_allocator_new(self->pinned);
  /* An upstream element that allocates each frame from our allocator (not
   * from our pool) finds the block of a frame we finished; one per frame
   * in flight and one being filled, as the pool holds. */
  gst_pp_pinned_allocator_set_spare(self->allocator, self->active_slots * PP_TICKETS_PER_SLOT + 1);
  self->srcresult = GST_FLOW_FLUSHING;
  GST_INFO_OBJECT(self, "started the %s backend with %u slots in CUDA context %p",
                  pp_engine_backend_name(engine), self->active_slots, options.cuda_context);
  gst_cuda_mlp_preload_configure(self);
  return TRUE;
}

static void
gst_cuda_mlp_stop(GstCudaMlp *self)
{
  /* A configure readied for the last start's caps uses the engine. */
  gst_cuda_mlp_preload_drop(self);
  gst_cuda_mlp_keep_stats(self);
  GST_OBJECT_LOCK(self);
  pp_engine *engine = self->engine;
  self->engine = NULL;
  GST_OBJECT_UNLOCK(self);
  /* Frees what is in flight exactly once, through the discard callback. */
  g_clear_pointer(&engine, pp_engine_free);
  gst_cuda_mlp_close_trace(self);
  if (self->output_pool) {
    gst_buffer_pool_set_active(self->output_pool, FALSE);
    gst_clear_object(&self->output_pool);
  }
  GST_OBJECT_LOCK(self);
  GstAllocator *allocator = g_steal_pointer(&self->allocator);
  GST_OBJECT_UNLOCK(self);
  gst_clear_object(&allocator);
  gst_cuda_mlp_model_stop(self);
  gst_clear_caps(&self->refused_caps);
  self->downstream_eos = FALSE;
  self->model = NULL;
}

static GstStateChangeReturn
gst_cuda_mlp_change_state(GstElement *element, GstStateChange transition)
{
  GstCudaMlp *self = GST_CUDA_MLP(element);
  if (transition == GST_STATE_CHANGE_NULL_TO_READY) {
    /* cuBLASLt loads while the CUDA context is made. */
    gst_cuda_mlp_preload_start(self);
    gst_cuda_mlp_context_ensure(self);
  }
  if (transition == GST_STATE_CHANGE_READY_TO_PAUSED)
    gst_cuda_mlp_preload_wait(self);
  if (transition == GST_STATE_CHANGE_READY_TO_NULL)
    gst_cuda_mlp_preload_drop(self);
  if (transition == GST_STATE_CHANGE_READY_TO_PAUSED && !gst_cuda_mlp_start(self))
    return GST_STATE_CHANGE_FAILURE;
  const GstStateChangeReturn ret =
      GST_ELEMENT_CLASS(parent_class)->change_state(element, transition);
  if (transition == GST_STATE_CHANGE_PAUSED_TO_READY ||
      (transition == GST_STATE_CHANGE_READY_TO_PAUSED && ret == GST_STATE_CHANGE_FAILURE))
    gst_cuda_mlp_stop(self);
  if (transition == GST_STATE_CHANGE_READY_TO_NULL)
    gst_cuda_mlp_context_drop(self);
  return ret;
}

static void
gst_cuda_mlp_set_context(GstElement *element, GstContext *context)
{
  gst_cuda_mlp_context_set(GST_CUDA_MLP(element), context);
  GST_ELEMENT_CLASS(parent_class)->set_context(element, context);
}

/* ---- GObject ------------------------------------------------------------- */

static void
gst_cuda_mlp_get_property(GObject *object, guint prop_id, GValue *value, GParamSpec *pspec)
{
  GstCudaMlp *self = GST_CUDA_MLP(object);
  if (prop_id == PROP_STATS)
    g_value_take_boxed(value, gst_cuda_mlp_build_stats(self));
  else
    gst_cuda_mlp_get_config(self, prop_id, value, pspec);
}

static void
gst_cuda_mlp_finalize(GObject *object)
{
  GstCudaMlp *self = GST_CUDA_MLP(object);
  gst_cuda_mlp_preload_clear(self);
  gst_cuda_mlp_clear_config(self);
  gst_cuda_mlp_models_clear(&self->models);
  g_clear_pointer(&self->last_stats, gst_structure_free);
  gst_clear_object(&self->cuda_context);
  g_cond_clear(&self->drained);
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
  gst_cuda_mlp_install_properties(object_class);

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
  gst_cuda_mlp_mark_enums_as_api();
}

static void
gst_cuda_mlp_init(GstCudaMlp *self)
{
  GstElementClass *klass = GST_ELEMENT_GET_CLASS(self);
  gst_cuda_mlp_init_pads(self, gst_element_class_get_pad_template(klass, "sink"),
                         gst_element_class_get_pad_template(klass, "src"));
  gst_cuda_mlp_init_config(self);
  gst_cuda_mlp_models_init(&self->models);
  g_cond_init(&self->drained);
}
