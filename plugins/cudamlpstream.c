/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* cudamlp's frames through the engine: the chain hands each frame to the
 * engine and returns; the source pad's task pushes each result, or event,
 * in the order they came, and answers downstream's flow returns as
 * GStreamer's elements do (downstream's EOS still lets upstream's EOS
 * through; an error stops the stream and nothing more goes downstream). */
#include "cudamlpstream.h"

#include <errno.h>

#include "cudainput.h"
#include "cudamlpcontext.h"
#include "cudamlpflow.h"
#include "cudamlpstats.h"
#include "gstpinnedallocator.h"
#include "scoresmeta.h"
#include "trace.h"
#include "timing.h"

GST_DEBUG_CATEGORY_EXTERN(gst_cuda_mlp_debug);
#define GST_CAT_DEFAULT gst_cuda_mlp_debug

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

/* ---- streaming ---------------------------------------------------------- */

/* A buffer refused while streaming: the frames accepted before it leave
 * first, in order, then the error (which the caller posts) ends the
 * stream. */
static void
refuse_after_drain(GstCudaMlp *self)
{
  gst_cuda_mlp_drain_pushed(self);
  gst_cuda_mlp_stop_stream(self, GST_FLOW_ERROR);
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

GstFlowReturn
gst_cuda_mlp_chain(GstPad *pad, GstObject *parent, GstBuffer *buffer)
{
  GstCudaMlp *self = GST_CUDA_MLP(parent);
  const gint64 entered = self->trace ? pp_now_ns() : 0;
  GstFlowReturn flow = gst_cuda_mlp_get_srcresult(self);
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
    gst_cuda_mlp_set_srcresult(self, GST_FLOW_NOT_NEGOTIATED);
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
    flow = gst_cuda_mlp_get_srcresult(self);
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
      return gst_cuda_mlp_get_srcresult(self);
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
  gst_cuda_mlp_stop_stream(self, flow);
  gst_pad_pause_task(self->srcpad);
}

static void
push_marker(GstCudaMlp *self, GstEvent *event)
{
  if (gst_cuda_mlp_drain_reached(self, event))
    return;
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
push_next(GstPad *pad)
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
    gst_cuda_mlp_stop_stream(self, GST_FLOW_ERROR);
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

gboolean
gst_cuda_mlp_start_pushing(GstCudaMlp *self)
{
  return gst_pad_start_task(self->srcpad, (GstTaskFunction) push_next, self->srcpad, NULL);
}
