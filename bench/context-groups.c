// SPDX-License-Identifier: LGPL-2.1-or-later
/* K CUDA contexts handed to the cameras' elements (context-groups.h). */
#include "context-groups.h"

#include <stdlib.h>

#ifdef PP_HAVE_GST_CUDA
#define GST_USE_UNSTABLE_API
#include <gst/cuda/gstcudacontext.h>
#include <gst/cuda/gstcudaloader.h>
#include <gst/cuda/gstcudautils.h>
#endif

struct PpContextGroups {
  GstContext **contexts;
  gint n;
};

void
pp_context_groups_free(PpContextGroups *groups)
{
  if (!groups)
    return;
  for (gint i = 0; groups->contexts && i < groups->n; i++)
    if (groups->contexts[i])
      gst_context_unref(groups->contexts[i]);
  g_free(groups->contexts);
  g_free(groups);
}

#ifdef PP_HAVE_GST_CUDA
/* The number of the camera whose bin (cam<i>) holds the object, or -1. */
static gint
camera_of(GstObject *object)
{
  gint camera = -1;
  GstObject *o = gst_object_ref(object);
  while (o && camera < 0) {
    if (GST_IS_BIN(o) && g_str_has_prefix(GST_OBJECT_NAME(o), "cam"))
      camera = atoi(GST_OBJECT_NAME(o) + 3);
    GstObject *parent = gst_object_get_parent(o);
    gst_object_unref(o);
    o = parent;
  }
  if (o)
    gst_object_unref(o);
  return camera;
}

static GstBusSyncReply
on_need_context(GstBus *bus, GstMessage *msg, gpointer data)
{
  (void) bus;
  const PpContextGroups *groups = data;
  const gchar *type = NULL;
  if (GST_MESSAGE_TYPE(msg) == GST_MESSAGE_NEED_CONTEXT &&
      gst_message_parse_context_type(msg, &type) && g_str_equal(type, GST_CUDA_CONTEXT_TYPE)) {
    const gint camera = camera_of(GST_MESSAGE_SRC(msg));
    if (camera >= 0)
      gst_element_set_context(GST_ELEMENT(GST_MESSAGE_SRC(msg)),
                              groups->contexts[camera % groups->n]);
  }
  return GST_BUS_PASS;
}

PpContextGroups *
pp_context_groups_new(GstElement *pipeline, gint k, gchar **why)
{
  if (!gst_cuda_load_library()) {
    *why = g_strdup("GStreamer's CUDA library found no CUDA driver");
    return NULL;
  }
  PpContextGroups *groups = g_new0(PpContextGroups, 1);
  groups->n = k;
  groups->contexts = g_new0(GstContext *, k);
  for (gint i = 0; i < k; i++) {
    GstCudaContext *cuda = gst_cuda_context_new(0);
    if (!cuda) {
      *why = g_strdup_printf("CUDA context %d of %d not made", i + 1, k);
      pp_context_groups_free(groups);
      return NULL;
    }
    groups->contexts[i] = gst_context_new_cuda_context(cuda);
    gst_object_unref(cuda);
  }
  GstBus *bus = gst_element_get_bus(pipeline);
  gst_bus_set_sync_handler(bus, on_need_context, groups, NULL);
  gst_object_unref(bus);
  return groups;
}
#else
PpContextGroups *
pp_context_groups_new(GstElement *pipeline, gint k, gchar **why)
{
  (void) pipeline;
  (void) k;
  *why = g_strdup("built without GStreamer's CUDA library");
  return NULL;
}
#endif
