/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* cudamlp's side of GstContext: finding, asking for and announcing the
 * shared CUDA context. */
#include "cudamlpcontext.h"

#include "cudainput.h"

GST_DEBUG_CATEGORY_EXTERN(gst_cuda_mlp_debug);
#define GST_CAT_DEFAULT gst_cuda_mlp_debug

GstObject *
gst_cuda_mlp_context_ref(GstCudaMlp *self)
{
  GST_OBJECT_LOCK(self);
  GstObject *ctx = self->cuda_context ? gst_object_ref(self->cuda_context) : NULL;
  GST_OBJECT_UNLOCK(self);
  return ctx;
}

/* False where device-id spreads the slots over several devices: a frame in
 * one GPU's memory is read by that GPU alone. */
static gboolean
on_one_device(GstCudaMlp *self)
{
  GST_OBJECT_LOCK(self);
  pp_backend_options devices = self->settings.backend;
  GST_OBJECT_UNLOCK(self);
  pp_backend_resolve_devices(&devices);
  return devices.n_devices <= 1;
}

static void
store(GstCudaMlp *self, GstObject *ctx)
{
  GST_OBJECT_LOCK(self);
  gst_object_replace(&self->cuda_context, ctx);
  self->cuda_context_tried = TRUE;
  GST_OBJECT_UNLOCK(self);
}

void
gst_cuda_mlp_context_ensure(GstCudaMlp *self)
{
  GST_OBJECT_LOCK(self);
  const pp_backend_kind kind = self->settings.backend.kind;
  const gint device = self->settings.backend.device_id;
  GST_OBJECT_UNLOCK(self);
  GstObject *ctx = gst_cuda_mlp_context_ref(self);
  const gboolean wanted = kind != PP_BACKEND_CPU && pp_backend_have_cuda() &&
                          pp_cuda_input_built() && on_one_device(self);
  if (wanted && !ctx && !pp_cuda_input_neighbours(GST_ELEMENT(self), device, &ctx)) {
    pp_cuda_input_ask_application(GST_ELEMENT(self));
    ctx = gst_cuda_mlp_context_ref(self);
    g_autofree gchar *why = NULL;
    if (!ctx && pp_cuda_input_primary(device, &ctx, &why))
      pp_cuda_input_announce(GST_ELEMENT(self), ctx);
    else if (!ctx)
      GST_INFO_OBJECT(self, "no CUDA context (%s): frames in CUDA memory are not taken", why);
  }
  store(self, wanted ? ctx : NULL);
  gst_clear_object(&ctx);
}

void
gst_cuda_mlp_context_drop(GstCudaMlp *self)
{
  GST_OBJECT_LOCK(self);
  gst_clear_object(&self->cuda_context);
  self->cuda_context_tried = FALSE;
  GST_OBJECT_UNLOCK(self);
}

void
gst_cuda_mlp_context_set(GstCudaMlp *self, GstContext *context)
{
  GST_OBJECT_LOCK(self);
  const gint device = self->settings.backend.device_id;
  GST_OBJECT_UNLOCK(self);
  GstObject *ctx = gst_cuda_mlp_context_ref(self);
  pp_cuda_input_set_context(GST_ELEMENT(self), context, device, &ctx);
  GST_OBJECT_LOCK(self);
  gst_object_replace(&self->cuda_context, ctx);
  GST_OBJECT_UNLOCK(self);
  gst_clear_object(&ctx);
}

gboolean
gst_cuda_mlp_context_query(GstCudaMlp *self, GstQuery *query)
{
  GstObject *ctx = gst_cuda_mlp_context_ref(self);
  const gboolean handled = pp_cuda_input_handle_query(GST_ELEMENT(self), query, ctx);
  gst_clear_object(&ctx);
  return handled;
}

gboolean
gst_cuda_mlp_takes_cuda_memory(GstCudaMlp *self)
{
  GST_OBJECT_LOCK(self);
  gboolean ok;
  if (!self->cuda_context_tried)
    ok = pp_cuda_input_built() && pp_backend_have_cuda() &&
         self->settings.backend.kind != PP_BACKEND_CPU;
  else
    ok = self->cuda_context &&
         (!self->engine || g_str_equal(pp_engine_backend_name(self->engine), "cuda"));
  GST_OBJECT_UNLOCK(self);
  return ok && on_one_device(self);
}
