/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What the last start needed, readied while the pipeline starts. */
#include "cudamlppreload.h"

#include <errno.h>

#include "cuda_module.h"
#include "cudamlpmodel.h"
#include "tensorcaps.h"

GST_DEBUG_CATEGORY_EXTERN(gst_cuda_mlp_debug);
#define GST_CAT_DEFAULT gst_cuda_mlp_debug

#define NEEDS_BLAS "cublaslt"
#define NEEDS_NOTHING "nothing"

void
gst_cuda_mlp_plan_settings(GstCudaMlp *self, gboolean cuda_memory, GstCudaMlpPlanSettings *out)
{
  GST_OBJECT_LOCK(self);
  out->forced = g_strdup(self->settings.plan && *self->settings.plan ? self->settings.plan : NULL);
  const pp_tuning tuning = self->settings.tuning;
  const pp_precision precision = self->active_devices.precision;
  GST_OBJECT_UNLOCK(self);
  out->text = g_strdup_printf("precision=%s", pp_precision_name(precision));
  /* The frames' decoder synchronizes the CUDA context we share with it,
   * which no graph capture survives (backend.h). */
  out->plan = (pp_plan_settings){ tuning, out->forced, NULL, out->text, cuda_memory, false };
}

void
gst_cuda_mlp_plan_settings_clear(GstCudaMlpPlanSettings *s)
{
  g_clear_pointer(&s->forced, g_free);
  g_clear_pointer(&s->text, g_free);
}

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

/* ---- cuBLASLt, from NULL→READY to start ----------------------------------- */

static gpointer
load_blas(gpointer data)
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
  GstCudaMlpPreload *p = &self->preload;
  g_autofree gchar *key = hint_key(self);
  g_free(p->hint);
  p->hint = pp_start_hint_read(NULL, key);
  GST_OBJECT_LOCK(self);
  const gboolean cpu = self->settings.backend.kind == PP_BACKEND_CPU;
  GST_OBJECT_UNLOCK(self);
  if (!cpu && p->hint && g_str_has_prefix(p->hint, NEEDS_BLAS) && !p->library)
    p->library = g_thread_try_new("cudamlp-preload", load_blas, self, NULL);
}

/* ---- the engine, from start to the caps ---------------------------------- */

typedef struct {
  GstCudaMlp *self;
  const pp_model *model;
  pp_frame_layout layout;
} guess;

static gpointer
configure_guess(gpointer data)
{
  guess *g = data;
  GstCudaMlp *self = g->self;
  GstCudaMlpPlanSettings settings;
  gst_cuda_mlp_plan_settings(self, TRUE, &settings);
  settings.plan.cached_only = true;
  g_autofree gchar *msg = NULL;
  const int rc = pp_plan_configure(self->engine, g->model, &g->layout, self->active_slots,
                                   &settings.plan, &self->preload.outcome, &msg);
  gst_cuda_mlp_plan_settings_clear(&settings);
  if (rc < 0)
    GST_DEBUG_OBJECT(self, "not configured before the caps: %s", msg);
  g_free(g);
  return GINT_TO_POINTER(rc == 0);
}

void
gst_cuda_mlp_preload_configure(GstCudaMlp *self)
{
  GstCudaMlpPreload *p = &self->preload;
  const gchar *space = p->hint ? strchr(p->hint, ' ') : NULL;
  GST_OBJECT_LOCK(self);
  const gboolean cached =
      self->settings.tuning == PP_TUNING_CACHED && !(self->settings.plan && *self->settings.plan);
  const pp_mapping mapping = self->settings.mapping;
  const guint patch = self->settings.patch_size;
  const pp_color color = self->settings.color;
  GST_OBJECT_UNLOCK(self);
  if (!space || !cached || !self->pinned || p->configuring)
    return;
  g_autoptr(GstCaps) caps = gst_caps_from_string(space + 1);
  pp_frame_layout layout;
  gint fps_n, fps_d;
  g_autofree gchar *msg = NULL;
  const pp_model *model = NULL;
  if (!caps || !pp_caps_are_cuda_memory(caps) ||
      !pp_caps_to_layout(caps, mapping, patch, color, &layout, &fps_n, &fps_d, &msg) ||
      !(model = gst_cuda_mlp_model_for(self, layout.k, &msg)))
    return;
  guess *g = g_new0(guess, 1);
  *g = (guess){ self, model, layout };
  p->configuring = g_thread_try_new("cudamlp-preconf", configure_guess, g, NULL);
  if (!p->configuring) {
    g_free(g);
    return;
  }
  p->caps = g_steal_pointer(&caps);
  GST_DEBUG_OBJECT(self, "configuring for %" GST_PTR_FORMAT ", the last start's caps", p->caps);
}

static void
join_configure(GstCudaMlpPreload *p)
{
  if (p->configuring)
    p->configured = g_thread_join(g_steal_pointer(&p->configuring)) != NULL;
}

void
gst_cuda_mlp_preload_wait(GstCudaMlp *self)
{
  GstCudaMlpPreload *p = &self->preload;
  if (p->library)
    g_thread_join(g_steal_pointer(&p->library));
  join_configure(p);
}

gboolean
gst_cuda_mlp_preload_took(GstCudaMlp *self, GstCaps *caps, pp_plan_outcome *outcome)
{
  GstCudaMlpPreload *p = &self->preload;
  gst_cuda_mlp_preload_wait(self);
  const gboolean took = p->configured && p->caps && gst_caps_is_equal(caps, p->caps);
  if (took) {
    *outcome = p->outcome;
    p->outcome = (pp_plan_outcome){ 0 };
  }
  gst_cuda_mlp_preload_drop(self);
  return took;
}

void
gst_cuda_mlp_preload_drop(GstCudaMlp *self)
{
  GstCudaMlpPreload *p = &self->preload;
  gst_cuda_mlp_preload_wait(self);
  pp_plan_outcome_clear(&p->outcome);
  p->configured = FALSE;
  gst_clear_caps(&p->caps);
}

void
gst_cuda_mlp_preload_note(GstCudaMlp *self, GstCaps *caps, const pp_plan_info *info)
{
  GstCudaMlpPreload *p = &self->preload;
  if (!self->pinned)
    return; /* the CPU backend loads nothing and configures at once */
  g_autofree gchar *text = pp_caps_are_cuda_memory(caps) ? gst_caps_to_string(caps) : NULL;
  g_autofree gchar *hint = g_strdup_printf("%s%s%s", info->blas ? NEEDS_BLAS : NEEDS_NOTHING,
                                           text ? " " : "", text ? text : "");
  if (g_strcmp0(hint, p->hint) == 0)
    return;
  g_autofree gchar *key = hint_key(self);
  pp_start_hint_write(NULL, key, hint);
  g_free(p->hint);
  p->hint = g_steal_pointer(&hint);
}

void
gst_cuda_mlp_preload_clear(GstCudaMlp *self)
{
  gst_cuda_mlp_preload_drop(self);
  g_clear_pointer(&self->preload.hint, g_free);
}
