/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What the last start loaded for its plan, loaded again while the pipeline
 * starts. */
#include "cudamlppreload.h"

#include "cuda_module.h"

GST_DEBUG_CATEGORY_EXTERN(gst_cuda_mlp_debug);
#define GST_CAT_DEFAULT gst_cuda_mlp_debug

#define HINT_BLAS "cublaslt"
#define HINT_NOTHING "nothing"

/* The settings a start has before its frames come that decide its plan's
 * kernels: the model, the precision, the slots, the devices. */
static gchar *
hint_key(GstCudaMlp *self)
{
  GST_OBJECT_LOCK(self);
  const GstCudaMlpSettings *s = &self->settings;
  gchar *key = g_strdup_printf(
      "cudamlp model=%s layers=%s hidden-sizes=%s hidden-size=%u outputs=%u activation=%d "
      "precision=%d slots=%u device-id=%s shared=%d backend=%d",
      s->model_path ? s->model_path : "", s->layers ? s->layers : "",
      s->hidden_sizes ? s->hidden_sizes : "", s->hidden_size, s->outputs, s->hidden_activation,
      s->backend.precision, s->slots, s->device_ids ? s->device_ids : "", s->shared,
      s->backend.kind);
  GST_OBJECT_UNLOCK(self);
  return key;
}

static gpointer
preload_blas(gpointer data)
{
  GstCudaMlp *self = data;
  g_autofree gchar *msg = NULL;
  const gint64 t0 = g_get_monotonic_time();
  if (pp_cuda_preload_blas(&msg) < 0)
    GST_DEBUG_OBJECT(self, "cuBLASLt not loaded early: %s", msg);
  else
    GST_DEBUG_OBJECT(self, "cuBLASLt loaded early, as the last start's plan needed it: %.1f ms",
                     (g_get_monotonic_time() - t0) / 1e3);
  return NULL;
}

void
gst_cuda_mlp_preload_start(GstCudaMlp *self)
{
  g_autofree gchar *key = hint_key(self);
  g_free(self->preload_hint);
  self->preload_hint = pp_start_hint_read(NULL, key);
  GST_OBJECT_LOCK(self);
  const gboolean cpu = self->settings.backend.kind == PP_BACKEND_CPU;
  GST_OBJECT_UNLOCK(self);
  if (cpu || g_strcmp0(self->preload_hint, HINT_BLAS) != 0 || self->preload)
    return;
  self->preload = g_thread_try_new("cudamlp-preload", preload_blas, self, NULL);
}

void
gst_cuda_mlp_preload_finish(GstCudaMlp *self)
{
  if (self->preload)
    g_thread_join(g_steal_pointer(&self->preload));
}

void
gst_cuda_mlp_preload_note(GstCudaMlp *self, const pp_plan_info *info)
{
  const gchar *hint = info->blas ? HINT_BLAS : HINT_NOTHING;
  if (!self->pinned || g_strcmp0(hint, self->preload_hint) == 0)
    return;
  g_autofree gchar *key = hint_key(self);
  pp_start_hint_write(NULL, key, hint);
  g_free(self->preload_hint);
  self->preload_hint = g_strdup(hint);
}
