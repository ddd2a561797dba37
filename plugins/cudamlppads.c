/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* cudamlp's pads: their activation, and the events and queries that
 * reach them. A serialized event queues on the engine behind the frames
 * before it, so that the source task (cudamlpstream.c) pushes both in the
 * order they came. */
#include "cudamlppads.h"

#include "cudamlpcaps.h"
#include "cudamlpcontext.h"
#include "cudamlpflow.h"
#include "cudamlppreload.h"
#include "cudamlpstream.h"

GST_DEBUG_CATEGORY_EXTERN(gst_cuda_mlp_debug);
#define GST_CAT_DEFAULT gst_cuda_mlp_debug

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
    gst_cuda_mlp_set_srcresult(self, GST_FLOW_OK);
    pp_engine_set_flushing(self->engine, FALSE);
    return gst_cuda_mlp_start_pushing(self);
  }
  gst_cuda_mlp_set_srcresult(self, GST_FLOW_FLUSHING);
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
  } else if (!gst_cuda_mlp_drain_pushed(self)) {
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
        gst_cuda_mlp_set_srcresult(self, GST_FLOW_NOT_NEGOTIATED);
        break;
      case CAPS_FAILED:
        gst_cuda_mlp_stop_stream(self, GST_FLOW_ERROR);
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
      gst_cuda_mlp_set_srcresult(self, GST_FLOW_FLUSHING);
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
      gst_cuda_mlp_set_srcresult(self, GST_FLOW_OK);
      ret = gst_pad_push_event(self->srcpad, event);
      gst_cuda_mlp_start_pushing(self);
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
