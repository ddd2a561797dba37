/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Frames in CUDA memory (`video/x-raw(memory:CUDAMemory)`) through
 * GStreamer's own CUDA library: sharing one CUDA context with the elements
 * around cudamlp (GstContext), and finding where a buffer's planes are on
 * the device. Without the library (built without it, or no driver at run
 * time) every function says no and cudamlp takes system memory only. */
#ifndef GST_PP_CUDA_INPUT_H
#define GST_PP_CUDA_INPUT_H

#include <gst/gst.h>

#include "backend.h"
#include "frame.h"

G_BEGIN_DECLS

/* Whether this build reads CUDA memory at all (GStreamer's CUDA library). */
gboolean pp_cuda_input_built(void);

/* Finding a context (a GstCudaContext) for `device_id`, in the order
 * GStreamer's elements look: a neighbour's, by a CONTEXT query on each
 * pad (FALSE: none, or no CUDA driver); the application's, asked with a
 * NEED_CONTEXT message (it answers through set_context); else the device's
 * primary context, wrapped, which the element then announces (set on
 * itself, and a HAVE_CONTEXT message for the pipeline to hand on). */
gboolean pp_cuda_input_neighbours(GstElement *element, gint device_id, GstObject **ctx);
void pp_cuda_input_ask_application(GstElement *element);
gboolean pp_cuda_input_primary(gint device_id, GstObject **ctx, gchar **msg);
void pp_cuda_input_announce(GstElement *element, GstObject *ctx);

/* GstElement::set_context and the CONTEXT query, for `device_id`. */
void pp_cuda_input_set_context(GstElement *element, GstContext *context, gint device_id,
                               GstObject **ctx);
gboolean pp_cuda_input_handle_query(GstElement *element, GstQuery *query, GstObject *ctx);

/* The CUcontext behind `ctx`, for the backend. */
gpointer pp_cuda_input_handle(GstObject *ctx);

/* Whether `buffer` holds CUDA memory. */
gboolean pp_cuda_input_is_device(GstBuffer *buffer);

/* Maps a CUDA-memory `buffer` for reading on the device and fills the job's
 * device planes for `layout`, honouring the buffer's own strides (its
 * GstVideoMeta, else the memory's own video info). Memory of a context on
 * another GPU than ours is an error that says so; memory of another context
 * on our GPU cannot be read by our kernels and goes through host memory.
 * `map` stays mapped until the caller unmaps it. */
typedef enum {
  PP_CUDA_INPUT_DEVICE, /* mapped: the job reads it on the device */
  PP_CUDA_INPUT_HOST,   /* another context on our GPU: map it to host memory instead */
  PP_CUDA_INPUT_ERROR,  /* *msg says why */
} pp_cuda_input_where;

pp_cuda_input_where pp_cuda_input_map(GstBuffer *buffer, GstObject *ctx,
                                      const pp_frame_layout *layout, GstMapInfo *map, pp_job *job,
                                      gchar **msg);

/* A pool of CUDA memory in `ctx` for upstream to fill (cudaupload). */
GstBufferPool *pp_cuda_input_pool(GstObject *ctx, GstCaps *caps, guint size, guint min_buffers);

G_END_DECLS

#endif
