/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Frames in CUDA memory through GStreamer's CUDA library (cudainput.h):
 * contexts shared, memory read in place. */
#include "cudainput.h"

#ifdef PP_HAVE_GST_CUDA

#define GST_USE_UNSTABLE_API
#include <gst/cuda/gstcudabufferpool.h>
#include <gst/cuda/gstcudacontext.h>
#include <gst/cuda/gstcudaloader.h>
#include <gst/cuda/gstcudamemory.h>
#include <gst/cuda/gstcudautils.h>
#include <gst/video/video.h>

#include "cuda_module.h"

static guint
context_device(GstCudaContext *ctx)
{
  guint device = 0;
  g_object_get(ctx, "cuda-device-id", &device, NULL);
  return device;
}

gboolean
pp_cuda_input_built(void)
{
  return TRUE;
}

/* A neighbour's context for the device (a decoder's, cudaupload's), as
 * gst_cuda_ensure_element_context would find it first, or NULL. */
static GstCudaContext *
neighbours_context(GstElement *element, gint device_id)
{
  GstCudaContext *found = NULL;
  const char *pads[] = { "sink", "src" };
  for (guint i = 0; i < G_N_ELEMENTS(pads) && !found; i++) {
    GstPad *pad = gst_element_get_static_pad(element, pads[i]);
    GstQuery *query = gst_query_new_context(GST_CUDA_CONTEXT_TYPE);
    if (pad && gst_pad_peer_query(pad, query)) {
      GstContext *context = NULL;
      gst_query_parse_context(query, &context);
      if (context)
        gst_cuda_handle_set_context(element, context, device_id, &found);
    }
    gst_query_unref(query);
    gst_clear_object(&pad);
  }
  return found;
}

gboolean
pp_cuda_input_neighbours(GstElement *element, gint device_id, GstObject **ctx)
{
  /* No driver (libcuda) here: no CUDA memory either, and nothing to say. */
  if (!gst_cuda_load_library())
    return FALSE;
  *ctx = (GstObject *) neighbours_context(element, device_id);
  return *ctx != NULL;
}

void
pp_cuda_input_ask_application(GstElement *element)
{
  gst_element_post_message(
      element, gst_message_new_need_context(GST_OBJECT(element), GST_CUDA_CONTEXT_TYPE));
}

/* The device's primary context, wrapped: every cudamlp of the process, and
 * any decoder that finds it through them, then runs in the one context the
 * CUDA runtime uses anyway, instead of each making one of its own (contexts
 * on one GPU time-slice, and each costs a context's start). */
gboolean
pp_cuda_input_primary(gint device_id, GstObject **ctx, gchar **msg)
{
  if (!gst_cuda_load_library()) {
    *msg = g_strdup("GStreamer's CUDA library found no CUDA driver");
    return FALSE;
  }
  void *handle = NULL;
  CUdevice device;
  if (pp_cuda_primary_context(device_id, &handle, msg) < 0)
    return FALSE;
  if (CuDeviceGet(&device, device_id) != CUDA_SUCCESS) {
    *msg = g_strdup_printf("the CUDA driver has no device %d", device_id);
    return FALSE;
  }
  *ctx = (GstObject *) gst_cuda_context_new_wrapped((CUcontext) handle, device);
  if (!*ctx) {
    *msg = g_strdup("GStreamer's CUDA library refused the device's primary context");
    return FALSE;
  }
  return TRUE;
}

void
pp_cuda_input_announce(GstElement *element, GstObject *ctx)
{
  GstContext *context = gst_context_new_cuda_context((GstCudaContext *) ctx);
  gst_element_set_context(element, context);
  gst_element_post_message(element, gst_message_new_have_context(GST_OBJECT(element), context));
}

void
pp_cuda_input_set_context(GstElement *element, GstContext *context, gint device_id, GstObject **ctx)
{
  GstCudaContext *cuda = (GstCudaContext *) *ctx;
  gst_cuda_handle_set_context(element, context, device_id, &cuda);
  *ctx = (GstObject *) cuda;
}

gboolean
pp_cuda_input_handle_query(GstElement *element, GstQuery *query, GstObject *ctx)
{
  return ctx && gst_cuda_handle_context_query(element, query, (GstCudaContext *) ctx);
}

gpointer
pp_cuda_input_handle(GstObject *ctx)
{
  return ctx ? gst_cuda_context_get_handle((GstCudaContext *) ctx) : NULL;
}

gboolean
pp_cuda_input_is_device(GstBuffer *buffer)
{
  return gst_buffer_n_memory(buffer) > 0 && gst_is_cuda_memory(gst_buffer_peek_memory(buffer, 0));
}

pp_cuda_input_where
pp_cuda_input_map(GstBuffer *buffer, GstObject *ctx, const pp_frame_layout *layout, GstMapInfo *map,
                  pp_job *job, gchar **msg)
{
  GstCudaMemory *mem = (GstCudaMemory *) gst_buffer_peek_memory(buffer, 0);
  if (gst_buffer_n_memory(buffer) != 1) {
    *msg = g_strdup_printf("a CUDA buffer of %u memories; cudamlp reads one per frame",
                           gst_buffer_n_memory(buffer));
    return PP_CUDA_INPUT_ERROR;
  }
  if (!ctx) {
    *msg = g_strdup("a frame in CUDA memory, but cudamlp has no CUDA context");
    return PP_CUDA_INPUT_ERROR;
  }
  /* Wrappers of one CUcontext (the primary one) read each other's memory. */
  if (gst_cuda_context_get_handle(mem->context) !=
      gst_cuda_context_get_handle((GstCudaContext *) ctx)) {
    const guint theirs = context_device(mem->context),
                ours = context_device((GstCudaContext *) ctx);
    if (theirs != ours) {
      *msg = g_strdup_printf("upstream's CUDA memory is on GPU %u but cudamlp runs on GPU %u "
                             "(device-id); give both the same device",
                             theirs, ours);
      return PP_CUDA_INPUT_ERROR;
    }
    return PP_CUDA_INPUT_HOST;
  }
  if (!gst_buffer_map(buffer, map, GST_MAP_READ | GST_MAP_CUDA)) {
    *msg = g_strdup("cannot map a CUDA buffer on the device");
    return PP_CUDA_INPUT_ERROR;
  }
  /* Upstream's own pitch: the video meta where it put one, else the
   * memory's layout. */
  const GstVideoMeta *meta = gst_buffer_get_video_meta(buffer);
  for (guint p = 0; p < layout->n_planes; p++) {
    const gsize offset = meta ? meta->offset[p] : GST_VIDEO_INFO_PLANE_OFFSET(&mem->info, p);
    const gint stride = meta ? meta->stride[p] : GST_VIDEO_INFO_PLANE_STRIDE(&mem->info, p);
    if (stride < (gint) layout->planes[p].row_bytes) {
      gst_buffer_unmap(buffer, map);
      *msg = g_strdup_printf("plane %u of a CUDA buffer has a %d-byte stride, shorter than its "
                             "%u-byte rows",
                             p, stride, layout->planes[p].row_bytes);
      return PP_CUDA_INPUT_ERROR;
    }
    job->device_planes[p] = map->data + offset;
    job->device_pitch[p] = stride;
  }
  job->input_on_device = true;
  return PP_CUDA_INPUT_DEVICE;
}

GstBufferPool *
pp_cuda_input_pool(GstObject *ctx, GstCaps *caps, guint size, guint min_buffers)
{
  GstBufferPool *pool = gst_cuda_buffer_pool_new((GstCudaContext *) ctx);
  GstStructure *config = gst_buffer_pool_get_config(pool);
  gst_buffer_pool_config_set_params(config, caps, size, min_buffers, 0);
  gst_buffer_pool_config_add_option(config, GST_BUFFER_POOL_OPTION_VIDEO_META);
  if (!gst_buffer_pool_set_config(pool, config))
    gst_clear_object(&pool);
  return pool;
}

#else /* no GStreamer CUDA library */

gboolean
pp_cuda_input_built(void)
{
  return FALSE;
}

gboolean
pp_cuda_input_neighbours(GstElement *element, gint device_id, GstObject **ctx)
{
  (void) element, (void) device_id, (void) ctx;
  return FALSE;
}

void
pp_cuda_input_ask_application(GstElement *element)
{
  (void) element;
}

gboolean
pp_cuda_input_primary(gint device_id, GstObject **ctx, gchar **msg)
{
  (void) device_id, (void) ctx;
  *msg = g_strdup("built without GStreamer's CUDA library");
  return FALSE;
}

void
pp_cuda_input_announce(GstElement *element, GstObject *ctx)
{
  (void) element, (void) ctx;
}

void
pp_cuda_input_set_context(GstElement *element, GstContext *context, gint device_id, GstObject **ctx)
{
  (void) element, (void) context, (void) device_id, (void) ctx;
}

gboolean
pp_cuda_input_handle_query(GstElement *element, GstQuery *query, GstObject *ctx)
{
  (void) element, (void) query, (void) ctx;
  return FALSE;
}

gpointer
pp_cuda_input_handle(GstObject *ctx)
{
  (void) ctx;
  return NULL;
}

gboolean
pp_cuda_input_is_device(GstBuffer *buffer)
{
  (void) buffer;
  return FALSE;
}

pp_cuda_input_where
pp_cuda_input_map(GstBuffer *buffer, GstObject *ctx, const pp_frame_layout *layout, GstMapInfo *map,
                  pp_job *job, gchar **msg)
{
  (void) buffer, (void) ctx, (void) layout, (void) map, (void) job;
  *msg = g_strdup("built without GStreamer's CUDA library");
  return PP_CUDA_INPUT_ERROR;
}

GstBufferPool *
pp_cuda_input_pool(GstObject *ctx, GstCaps *caps, guint size, guint min_buffers)
{
  (void) ctx, (void) caps, (void) size, (void) min_buffers;
  return NULL;
}

#endif
