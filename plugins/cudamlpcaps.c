#include "cudamlpcaps.h"

#include "cudamlpenums.h"
#include "tensorcaps.h"

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
  const GstCudaMlpOutput output = self->output;
  GST_OBJECT_UNLOCK(self);
  if (output == GST_CUDA_MLP_OUTPUT_AUTO)
    return !downstream_takes_tensors(self);
  return output == GST_CUDA_MLP_OUTPUT_VIDEO_META;
}

/* The frames this element takes, as far as `filter` allows. */
static GstCaps *
sink_caps(GstCudaMlp *self, GstCaps *filter, gboolean cuda_memory)
{
  GST_OBJECT_LOCK(self);
  const pp_color color = self->color;
  const pp_mapping mapping = self->mapping;
  const guint patch = self->patch_size, k = self->file_inputs;
  GST_OBJECT_UNLOCK(self);
  GstCaps *caps = pp_sink_caps(cuda_memory, color);
  if (k) { /* a model file: only frames that give it its K */
    GstCaps *fitting = pp_caps_for_inputs(caps, k, mapping, patch, color);
    gst_caps_unref(caps);
    caps = fitting;
  }
  if (filter) {
    GstCaps *both = gst_caps_intersect_full(filter, caps, GST_CAPS_INTERSECT_FIRST);
    gst_caps_unref(caps);
    caps = both;
  }
  return caps;
}

/* Any frames the element reads at all: caps that do not fit the model
 * (which the caps query steers negotiation away from) then fail at
 * set_caps with a message that says why, not a bare not-negotiated. */
gboolean
gst_cuda_mlp_accept_caps(GstCudaMlp *self, GstQuery *query, gboolean cuda_memory)
{
  GstCaps *caps;
  gst_query_parse_accept_caps(query, &caps);
  GST_OBJECT_LOCK(self);
  const pp_color color = self->color;
  GST_OBJECT_UNLOCK(self);
  GstCaps *readable = pp_sink_caps(cuda_memory, color);
  gst_query_set_accept_caps_result(query, gst_caps_is_subset(caps, readable));
  gst_caps_unref(readable);
  return TRUE;
}

gboolean
gst_cuda_mlp_sink_caps_query(GstCudaMlp *self, GstQuery *query, gboolean cuda_memory)
{
  GstCaps *filter;
  gst_query_parse_caps(query, &filter);
  GstCaps *caps = sink_caps(self, filter, cuda_memory);
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
gst_cuda_mlp_src_caps_query(GstCudaMlp *self, GstQuery *query, gboolean cuda_memory)
{
  GstCaps *filter;
  gst_query_parse_caps(query, &filter);
  GST_OBJECT_LOCK(self);
  const GstCudaMlpOutput output = self->output;
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
    GstCaps *ours = sink_caps(self, filter, cuda_memory);
    caps = gst_caps_merge(caps, gst_pad_peer_query_caps(self->sinkpad, ours));
    gst_caps_unref(ours);
  }
  gst_query_set_caps_result(query, caps);
  gst_caps_unref(caps);
  return TRUE;
}
