/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Loading or generating cudamlp's weights, cached by the settings they came
 * from. */
#include "cudamlpmodel.h"

GST_DEBUG_CATEGORY_EXTERN(gst_cuda_mlp_debug);
#define GST_CAT_DEFAULT gst_cuda_mlp_debug

/* What the model depends on, copied under the object lock. */
typedef struct {
  gchar *path, *layers, *sizes;
  pp_hidden_activation activation;
  guint hidden_size, outputs;
} model_settings;

static void
read_settings(GstCudaMlp *self, model_settings *s)
{
  GST_OBJECT_LOCK(self);
  const GstCudaMlpSettings *p = &self->settings;
  *s = (model_settings){ g_strdup(p->model_path && *p->model_path ? p->model_path : NULL),
                         g_strdup(p->layers && *p->layers ? p->layers : NULL),
                         g_strdup(p->hidden_sizes && *p->hidden_sizes ? p->hidden_sizes : NULL),
                         p->hidden_activation,
                         p->hidden_size,
                         p->outputs };
  GST_OBJECT_UNLOCK(self);
}

static void
clear_settings(model_settings *s)
{
  g_free(s->path);
  g_free(s->layers);
  g_free(s->sizes);
}

void
gst_cuda_mlp_models_init(GstCudaMlpModels *models)
{
  g_mutex_init(&models->lock);
}

void
gst_cuda_mlp_models_clear(GstCudaMlpModels *models)
{
  g_clear_pointer(&models->file, pp_model_free);
  g_clear_pointer(&models->file_key, g_free);
  g_clear_pointer(&models->generated, pp_model_free);
  g_clear_pointer(&models->generated_key, g_free);
  g_mutex_clear(&models->lock);
}

/* The model file for `s`, loaded unless it is already (lock held). */
static pp_model *
file_model_locked(GstCudaMlp *self, const model_settings *s, gchar **msg)
{
  GstCudaMlpModels *m = &self->models;
  g_autofree gchar *key =
      g_strdup_printf("%s|%s|%d", s->path, s->layers ? s->layers : "", s->activation);
  if (m->file && g_strcmp0(key, m->file_key) == 0)
    return m->file;
  g_clear_pointer(&m->file, pp_model_free);
  g_clear_pointer(&m->file_key, g_free);
  if (pp_model_load(s->path, s->layers, s->activation, &m->file, msg) < 0)
    return NULL;
  m->file_key = g_steal_pointer(&key);
  return m->file;
}

/* What generated weights look like: the layers property when set (every
 * Linear with its widths), else hidden-sizes (or hidden-size) and outputs,
 * with hidden-activation between the layers and ReLU at the end. */
static gboolean
generated_desc(const model_settings *s, guint k, pp_model_desc *desc, gchar **msg)
{
  if (s->layers) {
    gchar *reason = NULL;
    if (pp_model_desc_parse(s->layers, desc, &reason) < 0) {
      *msg = g_strdup_printf("the layers property '%s' is not a valid description: %s", s->layers,
                             reason);
      g_free(reason);
      return FALSE;
    }
    for (guint i = 0; i < desc->n_linear; i++)
      if (!desc->linear[i].has_dims) {
        *msg = g_strdup_printf("layers '%s': Linear layer %u has no widths; without a model "
                               "file every Linear needs them, e.g. linear(64,8)",
                               s->layers, i + 1);
        return FALSE;
      }
    return TRUE;
  }
  g_auto(GStrv) widths = g_strsplit(s->sizes ? s->sizes : "", ",", -1);
  const guint n_hidden = MAX(g_strv_length(widths), 1);
  if (n_hidden + 1 > PP_MAX_LAYERS) {
    *msg = g_strdup_printf("hidden-sizes '%s' asks for %u Linear layers; at most %d are supported",
                           s->sizes, n_hidden + 1, PP_MAX_LAYERS);
    return FALSE;
  }
  const pp_act between = { s->activation == PP_HIDDEN_RELU ? PP_ACT_RELU : PP_ACT_IDENTITY, 0.0f };
  *desc = (pp_model_desc){ .n_linear = n_hidden + 1 };
  guint in = k;
  for (guint i = 0; i <= n_hidden; i++) {
    guint64 out = i == n_hidden ? s->outputs : s->hidden_size;
    if (i < n_hidden && widths[0] &&
        !g_ascii_string_to_unsigned(g_strstrip(widths[i]), 10, 1, 1u << 24, &out, NULL)) {
      *msg = g_strdup_printf("hidden-sizes '%s': '%s' is not a width of 1..%u", s->sizes, widths[i],
                             1u << 24);
      return FALSE;
    }
    desc->linear[i] = (pp_desc_linear){ .has_dims = TRUE, .in = in, .out = out, .act = between };
    in = (guint) out;
  }
  desc->linear[n_hidden].act = (pp_act){ PP_ACT_RELU, 0.0f };
  return TRUE;
}

gboolean
gst_cuda_mlp_model_start(GstCudaMlp *self)
{
  model_settings s;
  read_settings(self, &s);
  gchar *msg = NULL;
  gboolean ok = TRUE;
  if (s.path) {
    g_mutex_lock(&self->models.lock);
    const pp_model *m = file_model_locked(self, &s, &msg);
    if (m) {
      g_autofree gchar *described = pp_model_describe(m);
      GST_INFO_OBJECT(self, "model %s: %s", m->source, described);
      if (m->assumed)
        GST_ELEMENT_WARNING(self, RESOURCE, SETTINGS, ("Assumed the model's activations."),
                            ("%s", m->assumed));
      if (m->nonfinite)
        GST_ELEMENT_WARNING(self, RESOURCE, SETTINGS, ("The model holds NaN or infinite values."),
                            ("%s", m->nonfinite));
    }
    g_mutex_unlock(&self->models.lock);
    if (!m) {
      GST_ELEMENT_ERROR(self, RESOURCE, OPEN_READ, ("Cannot load the model: %s.", msg),
                        ("model=%s", s.path));
      ok = FALSE;
    }
  } else {
    pp_model_desc desc;
    if (generated_desc(&s, 1, &desc, &msg))
      GST_ELEMENT_WARNING(
          self, RESOURCE, SETTINGS,
          ("No model file given: running generated weights, whose scores mean "
           "nothing. Set model=FILE.safetensors (pingpong-export writes one)."),
          ("generated from %s", s.layers ? "the layers property" : "hidden-sizes and outputs"));
    else {
      GST_ELEMENT_ERROR(self, RESOURCE, SETTINGS, ("Invalid model settings: %s.", msg),
                        ("%s", msg));
      ok = FALSE;
    }
  }
  g_clear_pointer(&msg, g_free);
  clear_settings(&s);
  return ok;
}

/* The file is read again at the next start: it may have been replaced. */
void
gst_cuda_mlp_model_stop(GstCudaMlp *self)
{
  GstCudaMlpModels *m = &self->models;
  g_mutex_lock(&m->lock);
  g_clear_pointer(&m->file, pp_model_free);
  g_clear_pointer(&m->file_key, g_free);
  g_mutex_unlock(&m->lock);
  g_clear_pointer(&m->generated, pp_model_free);
  g_clear_pointer(&m->generated_key, g_free);
}

pp_dtype
gst_cuda_mlp_model_stored(GstCudaMlp *self)
{
  model_settings s;
  read_settings(self, &s);
  pp_dtype stored = PP_DTYPE_F32;
  if (s.path) {
    g_autofree gchar *msg = NULL;
    g_mutex_lock(&self->models.lock);
    const pp_model *m = file_model_locked(self, &s, &msg);
    stored = m ? m->stored : PP_DTYPE_F32;
    g_mutex_unlock(&self->models.lock);
  }
  clear_settings(&s);
  return stored;
}

guint
gst_cuda_mlp_model_inputs(GstCudaMlp *self)
{
  model_settings s;
  read_settings(self, &s);
  guint k = 0;
  if (s.path) {
    g_autofree gchar *msg = NULL;
    g_mutex_lock(&self->models.lock);
    const pp_model *m = file_model_locked(self, &s, &msg);
    k = m ? m->k : 0;
    g_mutex_unlock(&self->models.lock);
  } else if (s.layers) {
    pp_model_desc desc;
    g_autofree gchar *msg = NULL;
    if (pp_model_desc_parse(s.layers, &desc, &msg) == 0 && desc.linear[0].has_dims)
      k = desc.linear[0].in;
  }
  clear_settings(&s);
  return k;
}

const pp_model *
gst_cuda_mlp_model_for(GstCudaMlp *self, guint k, gchar **msg)
{
  model_settings s;
  read_settings(self, &s);
  const pp_model *model = NULL;
  if (s.path) {
    g_mutex_lock(&self->models.lock);
    model = self->models.file;
    g_mutex_unlock(&self->models.lock);
    if (model && pp_model_check_inputs(model, k, msg) < 0)
      model = NULL;
    clear_settings(&s);
    return model;
  }
  GstCudaMlpModels *m = &self->models;
  g_autofree gchar *key =
      g_strdup_printf("%u|%u|%u|%d|%s|%s", k, s.hidden_size, s.outputs, s.activation,
                      s.layers ? s.layers : "", s.sizes ? s.sizes : "");
  if (m->generated && g_strcmp0(key, m->generated_key) == 0) {
    model = m->generated;
  } else {
    g_clear_pointer(&m->generated, pp_model_free);
    g_clear_pointer(&m->generated_key, g_free);
    pp_model_desc desc;
    if (generated_desc(&s, k, &desc, msg) &&
        pp_model_generate_desc(k, &desc, &m->generated, msg) == 0) {
      m->generated_key = g_steal_pointer(&key);
      model = m->generated;
    }
  }
  clear_settings(&s);
  return model;
}
