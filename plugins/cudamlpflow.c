/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What cudamlp's chain, source task and events share about the stream:
 * the flow return the chain answers with, the stream stopped for good, and
 * a drain that waits for the frames queued so far to leave (a marker
 * queued behind them, counted when the task reaches it). */
#include "cudamlpflow.h"

#define DRAIN_MARKER "pingpong-drain"

GstFlowReturn
gst_cuda_mlp_get_srcresult(GstCudaMlp *self)
{
  GST_OBJECT_LOCK(self);
  const GstFlowReturn flow = self->srcresult;
  GST_OBJECT_UNLOCK(self);
  return flow;
}

void
gst_cuda_mlp_set_srcresult(GstCudaMlp *self, GstFlowReturn flow)
{
  GST_OBJECT_LOCK(self);
  self->srcresult = flow;
  g_cond_broadcast(&self->drained);
  GST_OBJECT_UNLOCK(self);
}

void
gst_cuda_mlp_stop_stream(GstCudaMlp *self, GstFlowReturn flow)
{
  GST_OBJECT_LOCK(self);
  self->stream_failed = self->stream_failed || flow != GST_FLOW_FLUSHING;
  GST_OBJECT_UNLOCK(self);
  gst_cuda_mlp_set_srcresult(self, flow);
  pp_engine_set_flushing(self->engine, TRUE);
}

gboolean
gst_cuda_mlp_drain_pushed(GstCudaMlp *self)
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

gboolean
gst_cuda_mlp_drain_reached(GstCudaMlp *self, GstEvent *event)
{
  if (!gst_event_has_name(event, DRAIN_MARKER))
    return FALSE;
  GST_OBJECT_LOCK(self);
  self->drains_done++;
  g_cond_broadcast(&self->drained);
  GST_OBJECT_UNLOCK(self);
  gst_event_unref(event);
  return TRUE;
}
