/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* cudamlp's pads: the chain hands each frame to the engine and returns;
 * the source pad's task pushes each result, or event, in the order they
 * came; flow returns and events travel as GStreamer's elements have them
 * travel (downstream's EOS still lets upstream's EOS through; an error
 * stops the stream and nothing more goes downstream). */
#include "cudamlpstream.h"

#include <errno.h>
#include <gst/video/video.h>

#include "cudainput.h"
#include "cudamlpcaps.h"
#include "cudamlpcontext.h"
#include "cudamlppreload.h"
#include "cudamlpstats.h"
#include "gstpinnedallocator.h"
#include "scoresmeta.h"
#include "trace.h"
#include "timing.h"

GST_DEBUG_CATEGORY_EXTERN(gst_cuda_mlp_debug);
#define GST_CAT_DEFAULT gst_cuda_mlp_debug

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

void
gst_cuda_mlp_discard_item(void *owner, const pp_item *item)
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
  g_cond_broadcast(&self->drained);
  GST_OBJECT_UNLOCK(self);
}

/* The stream stops for good: the chain returns `flow` upstream from now
 * on, a chain waiting for a slot is released, and the source task pushes
 * nothing more (the caller has posted the error). */
static void
stop_stream(GstCudaMlp *self, GstFlowReturn flow)
{
  GST_OBJECT_LOCK(self);
  self->stream_failed = self->stream_failed || flow != GST_FLOW_FLUSHING;
  GST_OBJECT_UNLOCK(self);
  set_srcresult(self, flow);
  pp_engine_set_flushing(self->engine, TRUE);
}

/* ---- streaming ---------------------------------------------------------- */

static gboolean drain_pushed(GstCudaMlp *self);

/* A buffer refused while streaming: the frames accepted before it leave
 * first, in order, then the error (which the caller posts) ends the
 * stream. */
static void
refuse_after_drain(GstCudaMlp *self)
{
  drain_pushed(self);
  stop_stream(self, GST_FLOW_ERROR);
}

/* Maps a frame and its output buffer into `s` and fills the job's pointers;
 * takes both buffers either way (freed on failure, with *msg saying why,
 * for the caller to post once the frames before it have left). */
static GstFlowReturn
map_frame(GstCudaMlp *self, GstCudaMlpFrame *s, GstBuffer *buffer, GstBuffer *output, pp_job *job,
          gchar **msg)
{
  pp_cuda_input_where where = PP_CUDA_INPUT_HOST;
  if (pp_cuda_input_is_device(buffer)) {
    GstObject *ctx = gst_cuda_mlp_context_ref(self);
    where = pp_cuda_input_map(buffer, ctx, &self->layout, &s->input_map, job, msg);
    gst_clear_object(&ctx);
    if (where == PP_CUDA_INPUT_ERROR) {
      gst_buffer_unref(buffer);
      gst_buffer_unref(output);
      return GST_FLOW_ERROR;
    }
  }
  if (where == PP_CUDA_INPUT_HOST && !gst_buffer_map(buffer, &s->input_map, GST_MAP_READ)) {
    *msg = g_strdup("an input buffer cannot be mapped for reading");
    gst_buffer_unref(buffer);
    gst_buffer_unref(output);
    return GST_FLOW_ERROR;
  }
  s->input = buffer;
  if (!gst_buffer_map(output, &s->output_map, GST_MAP_WRITE)) {
    *msg = g_strdup("an output buffer cannot be mapped for writing");
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

static void
post_map_error(GstCudaMlp *self, const gchar *why)
{
  GST_ELEMENT_ERROR(self, STREAM, FAILED, ("Cannot read a frame: %s.", why), ("%s", why));
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
    GST_ELEMENT_ERROR(self, CORE, NEGOTIATION,
                      ("A buffer came before any caps: upstream must send caps first."),
                      ("no caps event before the first buffer"));
    set_srcresult(self, GST_FLOW_NOT_NEGOTIATED);
    flow = GST_FLOW_NOT_NEGOTIATED;
    goto drop;
  }
  const gsize size = gst_buffer_get_size(buffer);
  if (size < self->layout.frame_bytes) {
    refuse_after_drain(self);
    GST_ELEMENT_ERROR(self, STREAM, FORMAT,
                      ("A buffer of %" G_GSIZE_FORMAT " bytes came where the caps make a frame "
                       "%zu bytes: upstream cut a frame short (a truncated file or stream?).",
                       size, self->layout.frame_bytes),
                      ("after %" G_GUINT64_FORMAT " whole frames", self->chained));
    flow = GST_FLOW_ERROR;
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
  flow = map_frame(self, s, buffer, output, &job, &msg);
  if (flow != GST_FLOW_OK) {
    /* The ticket was only acquired: nothing of this frame is queued. */
    refuse_after_drain(self);
    post_map_error(self, msg);
    g_free(msg);
    return flow;
  }
  const int rc = pp_engine_submit(self->engine, ticket, &job, s, &msg);
  if (rc < 0) {
    release_frame(s);
    if (rc == -ECANCELED)
      return get_srcresult(self);
    refuse_after_drain(self);
    GST_ELEMENT_ERROR(self, RESOURCE, FAILED, ("Cannot queue a frame: %s.", msg), ("%s", msg));
    g_clear_pointer(&msg, g_free);
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
  if (!gst_pp_buffer_add_scores(frame, scores, l->n, self->model->o, kind, l->patch, grid_width,
                                grid_height))
    GST_WARNING_OBJECT(self, "could not attach the scores of a frame");
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

#define DRAIN_MARKER "pingpong-drain"

static void
push_marker(GstCudaMlp *self, GstEvent *event)
{
  if (gst_event_has_name(event, DRAIN_MARKER)) {
    GST_OBJECT_LOCK(self);
    self->drains_done++;
    g_cond_broadcast(&self->drained);
    GST_OBJECT_UNLOCK(self);
    gst_event_unref(event);
    return;
  }
  switch (GST_EVENT_TYPE(event)) {
    case GST_EVENT_STREAM_START:
    case GST_EVENT_SEGMENT:
      /* A new stream or segment: downstream may take frames again. */
      self->downstream_eos = FALSE;
      break;
    case GST_EVENT_EOS:
      gst_cuda_mlp_post_stats(self);
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
    GST_ELEMENT_ERROR(self, RESOURCE, FAILED,
                      ("Processing a frame failed on the %s backend: %s.",
                       pp_engine_backend_name(self->engine), item.message),
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
    GST_OBJECT_LOCK(self);
    self->stream_failed = FALSE;
    GST_OBJECT_UNLOCK(self);
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

/* Waits until every frame queued so far has left (pushed, or dropped
 * after downstream's EOS). False when the stream stopped or began flushing
 * first. */
static gboolean
drain_pushed(GstCudaMlp *self)
{
  if (!pp_engine_is_configured(self->engine))
    return TRUE;
  GST_OBJECT_LOCK(self);
  const guint ticket = ++self->drains_asked;
  GST_OBJECT_UNLOCK(self);
  GstEvent *marker =
      gst_event_new_custom(GST_EVENT_CUSTOM_DOWNSTREAM, gst_structure_new_empty(DRAIN_MARKER));
  if (pp_engine_push_marker(self->engine, marker) < 0) {
    gst_event_unref(marker);
    return FALSE;
  }
  GST_OBJECT_LOCK(self);
  while (self->drains_done < ticket &&
         (self->srcresult == GST_FLOW_OK || self->srcresult == GST_FLOW_EOS ||
          self->srcresult == GST_FLOW_NOT_NEGOTIATED))
    g_cond_wait(&self->drained, GST_OBJECT_GET_LOCK(self));
  const gboolean drained = self->drains_done >= ticket;
  GST_OBJECT_UNLOCK(self);
  return drained;
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
  /* A configure readied before the caps ends before the engine is drained
   * or configured. */
  gst_cuda_mlp_preload_wait(self);
  GST_OBJECT_LOCK(self);
  const gboolean failed = self->stream_failed;
  GST_OBJECT_UNLOCK(self);
  if (failed) {
    /* The stream has stopped with an error, said once: the sticky caps
     * sent again before each buffer, even while the pads deactivate, are
     * not weighed again until a flush or a restart. */
    GST_DEBUG_OBJECT(self, "stream stopped with an error: caps not taken");
  } else if (self->refused_caps && gst_caps_is_equal(caps, self->refused_caps)) {
    GST_DEBUG_OBJECT(self, "refused these caps already");
  } else if (!drain_pushed(self)) {
    /* Frames of the old caps leave before the new caps are weighed (the
     * slots are resized for them, and a refusal stops the stream); a flush
     * or an error came first, and answers for the stream. */
    GST_DEBUG_OBJECT(self, "stream stopped before its frames left: caps not taken");
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
       * paused here, so it is safe to touch what it owns, once a configure
       * readied before the caps is done. */
      gst_cuda_mlp_preload_drop(self);
      pp_engine_flush(self->engine);
      pp_engine_set_flushing(self->engine, FALSE);
      self->downstream_eos = FALSE;
      GST_OBJECT_LOCK(self);
      self->stream_failed = FALSE;
      GST_OBJECT_UNLOCK(self);
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
gst_cuda_mlp_sink_query(GstPad *pad, GstObject *parent, GstQuery *query)
{
  GstCudaMlp *self = GST_CUDA_MLP(parent);
  switch (GST_QUERY_TYPE(query)) {
    case GST_QUERY_ALLOCATION:
      return gst_cuda_mlp_propose_allocation(self, query);
    case GST_QUERY_CONTEXT:
      if (gst_cuda_mlp_context_query(self, query))
        return TRUE;
      break;
    case GST_QUERY_ACCEPT_CAPS:
      return gst_cuda_mlp_accept_caps(self, query);
    case GST_QUERY_CAPS:
      return gst_cuda_mlp_sink_caps_query(self, query);
    default:
      break;
  }
  return gst_pad_query_default(pad, parent, query);
}

static gboolean
gst_cuda_mlp_src_query(GstPad *pad, GstObject *parent, GstQuery *query)
{
  GstCudaMlp *self = GST_CUDA_MLP(parent);
  if (GST_QUERY_TYPE(query) == GST_QUERY_CONTEXT && gst_cuda_mlp_context_query(self, query))
    return TRUE;
  if (GST_QUERY_TYPE(query) == GST_QUERY_CAPS)
    return gst_cuda_mlp_src_caps_query(self, query);
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

void
gst_cuda_mlp_init_pads(GstCudaMlp *self, GstPadTemplate *sink, GstPadTemplate *src)
{
  self->sinkpad = gst_pad_new_from_template(sink, "sink");
  gst_pad_set_chain_function(self->sinkpad, GST_DEBUG_FUNCPTR(gst_cuda_mlp_chain));
  gst_pad_set_event_function(self->sinkpad, GST_DEBUG_FUNCPTR(gst_cuda_mlp_sink_event));
  gst_pad_set_query_function(self->sinkpad, GST_DEBUG_FUNCPTR(gst_cuda_mlp_sink_query));
  gst_pad_set_activatemode_function(self->sinkpad,
                                    GST_DEBUG_FUNCPTR(gst_cuda_mlp_sink_activate_mode));
  gst_element_add_pad(GST_ELEMENT(self), self->sinkpad);

  self->srcpad = gst_pad_new_from_template(src, "src");
  gst_pad_set_query_function(self->srcpad, GST_DEBUG_FUNCPTR(gst_cuda_mlp_src_query));
  gst_pad_set_activatemode_function(self->srcpad,
                                    GST_DEBUG_FUNCPTR(gst_cuda_mlp_src_activate_mode));
  gst_pad_use_fixed_caps(self->srcpad);
  gst_element_add_pad(GST_ELEMENT(self), self->srcpad);
  self->srcresult = GST_FLOW_FLUSHING;
  self->frame_duration = GST_CLOCK_TIME_NONE;
}
