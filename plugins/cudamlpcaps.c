/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* cudamlp's negotiation. The caps query answers with the frames the model
 * can take (rows: the width that gives its K; patches: the channel count
 * p·p·channels = K, and at least one whole patch), so videoconvert and
 * videoscale upstream pick a size that works; where the size is not
 * upstream's to choose, with every frame it reads, so that set_caps
 * refuses a size that does not fit saying why and what fits. set_caps turns the caps into
 * a frame layout, configures the engine (the plan from the cache where one
 * fits) and queues the output caps in order with the frames. */
#include "cudamlpcaps.h"

#include <gst/video/video.h>
#include <math.h>

#include "cudainput.h"
#include "cudamlpcontext.h"
#include "cudamlpenums.h"
#include "cudamlpmodel.h"
#include "cudamlppreload.h"
#include "gstpinnedallocator.h"
#include "tensorcaps.h"

GST_DEBUG_CATEGORY_EXTERN(gst_cuda_mlp_debug);
#define GST_CAT_DEFAULT gst_cuda_mlp_debug

static gboolean
downstream_takes_tensors(GstCudaMlp *self)
{
  GstCaps *tensors = gst_caps_from_string(PP_SRC_CAPS);
  GstCaps *taken = gst_pad_peer_query_caps(self->srcpad, tensors);
  const gboolean takes = !gst_caps_is_empty(taken);
  gst_caps_unref(taken);
  gst_caps_unref(tensors);
  return takes;
}

gboolean
gst_cuda_mlp_frames_out(GstCudaMlp *self)
{
  GST_OBJECT_LOCK(self);
  const GstCudaMlpOutput output = self->settings.output;
  GST_OBJECT_UNLOCK(self);
  if (output == GST_CUDA_MLP_OUTPUT_AUTO)
    return !downstream_takes_tensors(self);
  return output == GST_CUDA_MLP_OUTPUT_VIDEO_META;
}

static gboolean
has_video(const GstCaps *caps)
{
  for (guint i = 0; i < gst_caps_get_size(caps); i++)
    if (gst_structure_has_name(gst_caps_get_structure(caps, i), "video/x-raw"))
      return TRUE;
  return FALSE;
}

/* Whether every structure of `caps` names one width and one height. */
static gboolean
size_is_fixed(const GstCaps *caps)
{
  for (guint i = 0; i < gst_caps_get_size(caps); i++) {
    const GstStructure *s = gst_caps_get_structure(caps, i);
    const GValue *w = gst_structure_get_value(s, "width"),
                 *h = gst_structure_get_value(s, "height");
    if (!w || !h || !G_VALUE_HOLDS_INT(w) || !G_VALUE_HOLDS_INT(h))
      return FALSE;
  }
  return gst_caps_get_size(caps) > 0;
}

/* The frames this element takes, as far as `filter` allows. */
static GstCaps *
sink_caps(GstCudaMlp *self, GstCaps *filter, gboolean cuda_memory)
{
  GST_OBJECT_LOCK(self);
  const pp_color color = self->settings.color;
  const pp_mapping mapping = self->settings.mapping;
  const guint patch = self->settings.patch_size;
  GST_OBJECT_UNLOCK(self);
  const guint k = gst_cuda_mlp_model_inputs(self);
  GstCaps *readable = pp_sink_caps(cuda_memory, color);
  /* Without a filter the query is a link check (gst_parse's, an
   * application's): any frame we read links, and set_caps refuses a size
   * the model cannot take saying why, where a failed link says only
   * "could not link". */
  if (!filter)
    return readable;
  GstCaps *caps = mapping == PP_MAPPING_PATCHES ? pp_caps_at_least(readable, patch, patch)
                                                : gst_caps_ref(readable);
  GstCaps *fitting = k ? pp_caps_for_inputs(caps, k, mapping, patch, color) : NULL;
  if (fitting && !has_video(fitting)) {
    /* No video frame at all gives the model its K: negotiation goes on,
     * and set_caps refuses the frames naming the model's K and the caps. */
    GST_INFO_OBJECT(self, "no video frame gives the model's K=%u with these settings", k);
    gst_clear_caps(&fitting);
  }
  /* The sizes that fit, so videoscale upstream picks one; but a size fixed
   * upstream (a capsfilter's) that does not fit is taken, to be refused by
   * set_caps saying why rather than by a bare "not-negotiated". */
  GstCaps *both =
      gst_caps_intersect_full(filter, fitting ? fitting : caps, GST_CAPS_INTERSECT_FIRST);
  if (gst_caps_is_empty(both) && size_is_fixed(filter)) {
    gst_caps_unref(both);
    both = gst_caps_intersect_full(filter, readable, GST_CAPS_INTERSECT_FIRST);
  }
  gst_clear_caps(&fitting);
  gst_caps_unref(caps);
  gst_caps_unref(readable);
  return both;
}

/* Any raw video or tensors: frames the caps query steered away from
 * (another format, a size the model cannot take) are then refused at
 * set_caps with a message that says why and what to put upstream, not a
 * bare not-negotiated. */
gboolean
gst_cuda_mlp_accept_caps(GstCudaMlp *self, GstQuery *query)
{
  GstCaps *caps;
  gst_query_parse_accept_caps(query, &caps);
  GstCaps *readable = gst_caps_from_string("video/x-raw; video/x-raw(ANY); other/tensors");
  gst_query_set_accept_caps_result(query, gst_caps_can_intersect(caps, readable));
  gst_caps_unref(readable);
  (void) self;
  return TRUE;
}

gboolean
gst_cuda_mlp_sink_caps_query(GstCudaMlp *self, GstQuery *query)
{
  GstCaps *filter;
  gst_query_parse_caps(query, &filter);
  GstCaps *caps = sink_caps(self, filter, gst_cuda_mlp_takes_cuda_memory(self));
  /* The frames go on with their scores: downstream must take them too. */
  if (gst_cuda_mlp_frames_out(self)) {
    GstCaps *downstream = gst_pad_peer_query_caps(self->srcpad, caps);
    gst_caps_unref(caps);
    caps = downstream;
  }
  gst_query_set_caps_result(query, caps);
  gst_caps_unref(caps);
  return TRUE;
}

/* Tensors, or the frames as upstream has them, or (auto) either. */
gboolean
gst_cuda_mlp_src_caps_query(GstCudaMlp *self, GstQuery *query)
{
  GstCaps *filter;
  gst_query_parse_caps(query, &filter);
  GST_OBJECT_LOCK(self);
  const GstCudaMlpOutput output = self->settings.output;
  GST_OBJECT_UNLOCK(self);
  GstCaps *caps = gst_caps_new_empty();
  if (output != GST_CUDA_MLP_OUTPUT_VIDEO_META) {
    GstCaps *tensors = gst_caps_from_string(PP_SRC_CAPS);
    caps = gst_caps_merge(
        caps, filter ? gst_caps_intersect_full(filter, tensors, GST_CAPS_INTERSECT_FIRST)
                     : gst_caps_ref(tensors));
    gst_caps_unref(tensors);
  }
  if (output != GST_CUDA_MLP_OUTPUT_TENSORS) {
    GstCaps *ours = sink_caps(self, filter, gst_cuda_mlp_takes_cuda_memory(self));
    caps = gst_caps_merge(caps, gst_pad_peer_query_caps(self->sinkpad, ours));
    gst_caps_unref(ours);
  }
  gst_query_set_caps_result(query, caps);
  gst_caps_unref(caps);
  return TRUE;
}

/* ---- set_caps ------------------------------------------------------------ */

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

/* The engine configured for `model` and the layout of `caps`, its plan
 * from the cache where one fits (or readied before the caps came, for the
 * same caps); a cache that could not be used is said once. */
static gboolean
configure(GstCudaMlp *self, GstCaps *caps, const pp_model *model, const pp_frame_layout *layout)
{
  pp_plan_outcome outcome;
  if (gst_cuda_mlp_preload_took(self, caps, &outcome)) {
    GST_INFO_OBJECT(self, "configured at start for these caps, the last start's");
  } else {
    GstCudaMlpPlanSettings settings;
    gst_cuda_mlp_plan_settings(self, pp_caps_are_cuda_memory(caps), &settings);
    gchar *msg = NULL;
    const int rc = pp_plan_configure(self->engine, model, layout, self->active_slots,
                                     &settings.plan, &outcome, &msg);
    gst_cuda_mlp_plan_settings_clear(&settings);
    if (rc < 0) {
      GST_ELEMENT_ERROR(self, RESOURCE, FAILED, ("Cannot set up the compute backend: %s.", msg),
                        ("%s", msg));
      g_clear_pointer(&msg, g_free);
      return FALSE;
    }
  }
  if (outcome.warning && !self->plan_warned) {
    GST_ELEMENT_WARNING(self, RESOURCE, SETTINGS, ("The plan cache could not be used."),
                        ("%s", outcome.warning));
    self->plan_warned = TRUE;
  }
  GST_OBJECT_LOCK(self);
  if (outcome.read)
    self->plans_cached++;
  else
    self->plans_made++;
  GST_OBJECT_UNLOCK(self);
  pp_plan_info info;
  if (pp_engine_plan_info(self->engine, &info))
    gst_cuda_mlp_preload_note(self, caps, &info);
  GST_INFO_OBJECT(self, "plan %s (%s), cache entry %s", pp_engine_backend_detail(self->engine),
                  outcome.read ? "cached" : "made", outcome.path ? outcome.path : "none");
  pp_plan_outcome_clear(&outcome);
  return TRUE;
}

/* What would give the model its K, for frames laid out as `layout` (whose
 * K the model refused): the width (rows) or the patch-size (patches). */
static gchar *
fitting_size(GstCudaMlp *self, const pp_frame_layout *layout, pp_mapping mapping)
{
  const guint k = gst_cuda_mlp_model_inputs(self), c = MAX(layout->channels, 1);
  const gchar *channels = c == 1 ? "1 channel" : c == 3 ? "3 channels" : "4 channels";
  if (k == 0 || k % c != 0)
    return g_strdup_printf("; the model's K=%u is not a whole number of pixels of %s: "
                           "color= picks the channels",
                           k, channels);
  if (mapping == PP_MAPPING_ROWS)
    return g_strdup_printf("; with mapping=rows K is width × channels: frames %u pixels wide (K=%u "
                           "÷ %s) fit, videoscale before cudamlp makes them so",
                           k / c, k, channels);
  const guint side = (guint) (sqrt((double) (k / c)) + 0.5);
  if (side * side == k / c)
    return g_strdup_printf("; with mapping=patches K is patch-size² × channels: patch-size=%u "
                           "fits the model's K=%u",
                           side, k);
  return g_strdup_printf("; with mapping=patches K is patch-size² × channels, and the model's "
                         "K=%u ÷ %s is no square: mapping=rows may be what it was trained on",
                         k, channels);
}

/* Frames whose pixels are far from square were stretched on the way
 * (videoscale fitting them to the model's K keeps the picture's shape in
 * pixel-aspect-ratio): the model sees a distorted picture. */
static void
warn_if_stretched(GstCudaMlp *self, GstCaps *caps)
{
  GstVideoInfo info;
  if (!gst_video_info_from_caps(&info, caps) || info.par_n <= 0 || info.par_d <= 0)
    return;
  const double par = (double) info.par_n / info.par_d;
  if (par >= 0.5 && par <= 2.0)
    return;
  GST_ELEMENT_WARNING(self, STREAM, FORMAT,
                      ("Frames arrive stretched: %d×%d with pixel-aspect-ratio %d/%d (shown "
                       "%.0f×%d), so the model sees the picture distorted. Something upstream "
                       "(videoscale?) scaled them to fit the model's K; set the size with a "
                       "capsfilter, or use mapping=patches, which takes any size.",
                       info.width, info.height, info.par_n, info.par_d, info.width * par,
                       info.height),
                      ("caps %" GST_PTR_FORMAT, caps));
}

static gboolean
is_tensors(GstCaps *caps)
{
  return gst_structure_has_name(gst_caps_get_structure(caps, 0), "other/tensors");
}

/* Tensors whose innermost dimensions multiply to the model's K (NNStreamer's
 * C:W:H:N) are read as samples of those, and the element says so. */
static void
read_tensor_dimensions(GstCudaMlp *self, GstCaps *caps, pp_frame_layout *layout, gchar **msg)
{
  const GstStructure *s = gst_caps_get_structure(caps, 0);
  guint grouped;
  if (!pp_tensor_layout(s, gst_cuda_mlp_model_inputs(self), layout, &grouped, msg) || grouped == 1)
    return;
  GST_ELEMENT_INFO(self, STREAM, FORMAT,
                   ("Read tensors of dimensions %s as %u samples of K=%u: the innermost %u "
                    "dimensions (NNStreamer's C:W:H) make one sample.",
                    gst_structure_get_string(s, "dimensions"), layout->n, layout->k, grouped),
                   (NULL));
}

caps_outcome
gst_cuda_mlp_set_caps(GstCudaMlp *self, GstCaps *caps)
{
  GST_OBJECT_LOCK(self);
  const pp_mapping mapping = self->settings.mapping;
  const guint patch = self->settings.patch_size;
  const pp_color color = self->settings.color;
  GST_OBJECT_UNLOCK(self);

  pp_frame_layout layout;
  gint fps_n, fps_d;
  gchar *msg = NULL;
  const pp_model *model = NULL;
  const gchar *hint = "";
  g_autofree gchar *fits = NULL;
  if (pp_caps_are_cuda_memory(caps) && !gst_cuda_mlp_takes_cuda_memory(self))
    msg = g_strdup("frames in CUDA memory need backend=cuda, one device and a GPU");
  if (!msg && !pp_caps_to_layout(caps, mapping, patch, color, &layout, &fps_n, &fps_d, &msg) &&
      mapping == PP_MAPPING_PATCHES && !is_tensors(caps))
    hint = "; a smaller patch-size, or videoscale before cudamlp to make the frames larger, fits";
  else if (!msg && is_tensors(caps))
    read_tensor_dimensions(self, caps, &layout, &msg);
  if (!msg && !(model = gst_cuda_mlp_model_for(self, layout.k, &msg)))
    hint = layout.kind == PP_LAYOUT_TENSOR
               ? "; tensor dimensions are read as K:N, or as C:W:H:N where the innermost ones "
                 "multiply to the model's K"
               : (fits = fitting_size(self, &layout, mapping));
  if (msg) {
    GST_ELEMENT_ERROR(self, CORE, NEGOTIATION, ("Cannot process these frames: %s%s.", msg, hint),
                      ("caps %" GST_PTR_FORMAT, caps));
    g_clear_pointer(&msg, g_free);
    return CAPS_REFUSED;
  }
  /* The caller has drained the frames of the old caps: the slots can be
   * resized. */
  if (!configure(self, caps, model, &layout))
    return CAPS_FAILED;
  self->layout = layout;
  self->model = model;
  GST_OBJECT_LOCK(self);
  self->caps_samples = layout.n;
  self->caps_inputs = layout.k;
  self->caps_outputs = model->o;
  GST_OBJECT_UNLOCK(self);
  if (!make_output_pool(self, model)) {
    GST_ELEMENT_ERROR(self, RESOURCE, NO_SPACE_LEFT,
                      ("Cannot allocate %u output buffers of %" G_GSIZE_FORMAT
                       " bytes in pinned memory: fewer slots, or a smaller model output, needs "
                       "less.",
                       self->active_slots, (gsize) layout.n * model->o * sizeof(float)),
                      (NULL));
    return CAPS_FAILED;
  }
  self->frame_duration =
      fps_n > 0 ? gst_util_uint64_scale_int(GST_SECOND, fps_d, fps_n) : GST_CLOCK_TIME_NONE;
  g_autofree gchar *described = pp_model_describe(model);
  GST_INFO_OBJECT(self, "X is %u×%u, model %s (%s), %zu bytes per frame", layout.n, layout.k,
                  described, model->source, layout.frame_bytes);

  if (layout.kind != PP_LAYOUT_TENSOR)
    warn_if_stretched(self, caps);
  self->frames_out = gst_cuda_mlp_frames_out(self);
  GST_INFO_OBJECT(self, "pushing %s", self->frames_out ? "frames with scores" : "tensors");
  GstCaps *out_caps = self->frames_out ? gst_caps_copy(caps)
                                       : pp_caps_for_outputs(model->o, layout.n, fps_n, fps_d);
  GstEvent *out_event = gst_event_new_caps(out_caps);
  gst_caps_unref(out_caps);
  /* Refused while flushing: a stop is under way. */
  if (pp_engine_push_marker(self->engine, out_event) < 0) {
    gst_event_unref(out_event);
    return CAPS_FAILED;
  }
  return CAPS_TAKEN;
}

/* ---- allocation ---------------------------------------------------------- */

gboolean
gst_cuda_mlp_propose_allocation(GstCudaMlp *self, GstQuery *query)
{
  GstCaps *caps;
  gboolean need_pool;
  gst_query_parse_allocation(query, &caps, &need_pool);
  /* Upstream's query is not serialized with the stream: stop may be
   * freeing the allocator meanwhile. */
  GST_OBJECT_LOCK(self);
  g_autoptr(GstAllocator) allocator = self->allocator ? gst_object_ref(self->allocator) : NULL;
  const pp_mapping mapping = self->settings.mapping;
  const guint patch = self->settings.patch_size;
  GST_OBJECT_UNLOCK(self);
  if (!caps || !allocator)
    return FALSE;
  pp_frame_layout layout;
  gint fps_n, fps_d;
  g_autofree gchar *msg = NULL;
  /* RGB: the size of a whole frame whatever the model reads of it. */
  if (!pp_caps_to_layout(caps, mapping, patch, PP_COLOR_RGB, &layout, &fps_n, &fps_d, &msg))
    return FALSE;

  /* Enough buffers for every frame in flight plus one being filled upstream. */
  const guint min_buffers = self->active_slots * PP_TICKETS_PER_SLOT + 1;
  GstBufferPool *pool = NULL;
  if (pp_caps_are_cuda_memory(caps)) {
    /* Device memory in our context for cudaupload; frames keep their own
     * strides (video meta). */
    GstObject *ctx = gst_cuda_mlp_context_ref(self);
    if (need_pool && ctx)
      pool = pp_cuda_input_pool(ctx, caps, layout.frame_bytes, min_buffers);
    gst_clear_object(&ctx);
    gst_query_add_allocation_pool(query, pool, layout.frame_bytes, min_buffers, 0);
    gst_query_add_allocation_meta(query, GST_VIDEO_META_API_TYPE, NULL);
    if (pool)
      gst_object_unref(pool);
    return TRUE;
  }
  if (need_pool)
    pool = gst_pp_pinned_pool_new(allocator, caps, layout.frame_bytes, min_buffers, 0);
  gst_query_add_allocation_pool(query, pool, layout.frame_bytes, min_buffers, 0);
  if (pool)
    gst_object_unref(pool);
  GstAllocationParams params;
  gst_allocation_params_init(&params);
  params.align = 4095;
  gst_query_add_allocation_param(query, allocator, &params);
  return TRUE;
}
