// SPDX-License-Identifier: LGPL-2.1-or-later
/* Models: from safetensors files or a layers description, checked and
 * described (model_generate.c makes them from widths alone). */
#include "model.h"
#include "error.h"
#include "model_priv.h"

#include <errno.h>
#include <glib.h>
#include <math.h>
#include <string.h>

#include "whole_file.h"
#include "safetensors.h"

static const char expected_layout[] =
    "expected the state_dict of an nn.Sequential of nn.Linear layers and activations, e.g. "
    "0.weight, 0.bias, 2.weight, 2.bias";

typedef struct {
  long index;
  const pp_st_tensor *weight, *bias;
} linear_layer;

uint64_t
pp_model_new_id(void)
{
  static GMutex lock;
  static uint64_t next_id = 1;
  g_mutex_lock(&lock);
  const uint64_t id = next_id++;
  g_mutex_unlock(&lock);
  return id;
}

/* Every refusal here says where it comes from first. */
#define fail(msg, source, fmt, ...) pp_error(msg, EINVAL, "%s: " fmt, source, ##__VA_ARGS__)

/* Splits "<prefix><index>.weight" into its parts; FALSE if the name is not a
 * Linear parameter. */
static gboolean
split_name(const char *name, char **prefix, long *index, gboolean *is_bias)
{
  const char *dot = strrchr(name, '.');
  if (!dot || (strcmp(dot, ".weight") != 0 && strcmp(dot, ".bias") != 0))
    return FALSE;
  *is_bias = strcmp(dot, ".bias") == 0;
  const char *digits = dot;
  while (digits > name && g_ascii_isdigit(digits[-1]))
    digits--;
  if (digits == dot || dot - digits > 9)
    return FALSE;
  *index = strtol(digits, NULL, 10);
  *prefix = g_strndup(name, digits - name);
  return TRUE;
}

static int
compare_index(const void *a, const void *b)
{
  const long x = ((const linear_layer *) a)->index, y = ((const linear_layer *) b)->index;
  return (x > y) - (x < y);
}

/* A file of more Linear layers than are supported: how many, and the
 * tensors of the first and last by index (the file lists its tensors by
 * name, where "16.weight" comes before "2.weight"). */
static int
too_many_layers(const pp_safetensors *st, const char *source, char **msg)
{
  GHashTable *seen = g_hash_table_new(g_direct_hash, g_direct_equal);
  long lo = G_MAXLONG, hi = -1;
  const char *first = NULL, *last = NULL;
  for (size_t i = 0; i < st->n_tensors; i++) {
    char *prefix;
    long index;
    gboolean is_bias;
    if (!split_name(st->tensors[i].name, &prefix, &index, &is_bias))
      continue;
    g_free(prefix);
    g_hash_table_add(seen, GSIZE_TO_POINTER((gsize) index));
    if (index < lo || (index == lo && !is_bias))
      lo = index, first = st->tensors[i].name;
    if (index > hi || (index == hi && !is_bias))
      hi = index, last = st->tensors[i].name;
  }
  const guint n = g_hash_table_size(seen);
  g_hash_table_destroy(seen);
  return fail(msg, source,
              "the file holds %u Linear layers ('%s' to '%s'); at most %d are supported", n, first,
              last, PP_MAX_LAYERS);
}

/* The file's Linear layers in index order. */
static int
find_layers(const pp_safetensors *st, const char *source, linear_layer layers[PP_MAX_LAYERS],
            unsigned *n_found, char **msg)
{
  g_autofree char *prefix = NULL;
  const char *prefix_owner = NULL;
  unsigned n_layers = 0;

  if (st->n_tensors == 0)
    return fail(msg, source, "the file holds no tensors; %s", expected_layout);
  for (size_t i = 0; i < st->n_tensors; i++) {
    const pp_st_tensor *t = &st->tensors[i];
    char *this_prefix;
    long index;
    gboolean is_bias;
    if (!split_name(t->name, &this_prefix, &index, &is_bias))
      return fail(msg, source, "unexpected tensor '%s'; %s", t->name, expected_layout);
    if (!prefix) {
      prefix = this_prefix;
      prefix_owner = t->name;
    } else {
      const gboolean same = strcmp(prefix, this_prefix) == 0;
      g_free(this_prefix);
      if (!same)
        return fail(msg, source, "tensors '%s' and '%s' come from different modules; %s",
                    prefix_owner, t->name, expected_layout);
    }
    linear_layer *layer = NULL;
    for (unsigned l = 0; l < n_layers; l++)
      if (layers[l].index == index)
        layer = &layers[l];
    if (!layer) {
      if (n_layers == PP_MAX_LAYERS)
        return too_many_layers(st, source, msg);
      layer = &layers[n_layers++];
      *layer = (linear_layer){ .index = index };
    }
    if (is_bias)
      layer->bias = t;
    else
      layer->weight = t;
  }
  qsort(layers, n_layers, sizeof *layers, compare_index);
  for (unsigned l = 0; l < n_layers; l++)
    if (!layers[l].weight)
      return fail(msg, source, "missing tensor '%s%ld.weight' (its bias is there)", prefix,
                  layers[l].index);
  *n_found = n_layers;
  return 0;
}

static int
check_tensor(const pp_st_tensor *t, uint32_t rank, const char *source, char **msg)
{
  if (t->dtype == PP_DTYPE_OTHER)
    return fail(msg, source, "tensor '%s' has dtype %s; expected F32 (F16 and BF16 are converted)",
                t->name, t->dtype_name);
  if (t->rank != rank) {
    g_autofree char *dims = pp_st_shape_string(t);
    return fail(msg, source, "tensor '%s' is %s; a Linear %s has %u dimension%s", t->name, dims,
                rank == 2 ? "weight" : "bias", rank, rank == 1 ? "" : "s");
  }
  for (uint32_t i = 0; i < rank; i++)
    if (t->shape[i] == 0 || t->shape[i] > PP_MODEL_MAX_DIM)
      return fail(msg, source, "tensor '%s' has dimension %" G_GUINT64_FORMAT "; expected 1..%u",
                  t->name, t->shape[i], PP_MODEL_MAX_DIM);
  return 0;
}

static int
check_layer(const linear_layer *layer, const char *source, char **msg)
{
  int rc = check_tensor(layer->weight, 2, source, msg);
  if (rc == 0 && layer->bias)
    rc = check_tensor(layer->bias, 1, source, msg);
  if (rc == 0 && layer->bias && layer->bias->shape[0] != layer->weight->shape[0])
    rc = fail(
        msg, source,
        "tensor '%s' has %" G_GUINT64_FORMAT " entries but '%s' has %" G_GUINT64_FORMAT " outputs",
        layer->bias->name, layer->bias->shape[0], layer->weight->name, layer->weight->shape[0]);
  return rc;
}

static float *
to_f32(const pp_st_tensor *t)
{
  if (!t)
    return NULL;
  float *values = g_new(float, t->elements);
  pp_st_tensor_to_f32(t, values);
  return values;
}

/* The 16-bit type every weight and bias is stored in, else float32. */
static pp_dtype
stored_type(const linear_layer *layers, unsigned n)
{
  const pp_dtype first = layers[0].weight->dtype;
  if (first != PP_DTYPE_BF16 && first != PP_DTYPE_F16)
    return PP_DTYPE_F32;
  for (unsigned l = 0; l < n; l++)
    if (layers[l].weight->dtype != first || (layers[l].bias && layers[l].bias->dtype != first))
      return PP_DTYPE_F32;
  return first;
}

/* How many of `n` values are NaN or infinite. */
static size_t
count_nonfinite(const float *v, size_t n)
{
  size_t bad = 0;
  for (size_t i = 0; v && i < n; i++)
    bad += !isfinite(v[i]);
  return bad;
}

/* The first tensor holding NaN or Inf, said as a sentence, or NULL. */
static char *
describe_nonfinite(const pp_model *m)
{
  for (unsigned l = 0; l < m->n_layers; l++) {
    const pp_layer *layer = &m->layers[l];
    const size_t in_w = count_nonfinite(layer->w, (size_t) layer->out * layer->in);
    const size_t in_b = count_nonfinite(layer->b, layer->out);
    if (in_w || in_b)
      return g_strdup_printf(
          "%s: tensor '%s'%s holds %zu NaN or infinite value%s: every score that depends on it "
          "will be NaN",
          m->source, layer->name, in_w ? "" : "'s bias", in_w ? in_w : in_b,
          (in_w ? in_w : in_b) == 1 ? "" : "s");
  }
  return NULL;
}

static void
free_layers(pp_model *m)
{
  for (unsigned i = 0; i < m->n_layers; i++) {
    g_free(m->layers[i].w);
    g_free(m->layers[i].b);
    g_free(m->layers[i].name);
  }
}

/* Where the activations come from: the property, the file's metadata, or
 * (neither) the two-layer convention, which is then written to
 * desc->linear[].act and explained in *assumed. */
static int
describe(const pp_safetensors *st, const char *name, const char *layers_property,
         pp_hidden_activation hidden, const linear_layer *layers, unsigned n_layers,
         pp_model_desc *desc, char **assumed, char **msg)
{
  const char *meta = pp_safetensors_metadata(st, PP_MODEL_DESC_KEY);
  const char *text = layers_property && *layers_property ? layers_property : meta;
  const char *origin =
      text == layers_property ? "the layers property" : "its " PP_MODEL_DESC_KEY " metadata";
  if (text) {
    g_autofree char *reason = NULL;
    if (pp_model_desc_parse(text, desc, &reason) < 0)
      return fail(msg, name, "%s '%s' is not a valid description: %s", origin, text, reason);
    if (desc->n_linear != n_layers)
      return fail(
          msg, name, "%s describes %u Linear layer%s but the file holds %u (the first is '%s')",
          origin, desc->n_linear, desc->n_linear == 1 ? "" : "s", n_layers, layers[0].weight->name);
    return 0;
  }
  if (n_layers != 2)
    return fail(msg, name,
                "the file holds %u Linear layers and says nothing of its activations: write it "
                "with tools/pingpong-export, or describe it with the layers property (e.g. "
                "layers=\"linear, relu, linear, gelu, linear\")",
                n_layers);
  *desc = (pp_model_desc){ .n_linear = 2 };
  const bool relu =
      hidden == PP_HIDDEN_AUTO ? layers[1].index - layers[0].index >= 2 : hidden == PP_HIDDEN_RELU;
  desc->linear[0].act = (pp_act){ relu ? PP_ACT_RELU : PP_ACT_IDENTITY, 0.0f };
  desc->linear[1].act = (pp_act){ PP_ACT_RELU, 0.0f };
  *assumed = g_strdup_printf(
      "%s has no %s metadata and no layers property was set, so it is run as the two-layer "
      "convention: Linear, %sLinear, ReLU. If that is not the model, export it with "
      "tools/pingpong-export or set the layers property.",
      name, PP_MODEL_DESC_KEY, relu ? "ReLU, " : "");
  return 0;
}

/* Each layer's tensors against the description and the previous layer. */
static int
check_against(const char *name, const linear_layer *layers, unsigned n, const pp_model_desc *desc,
              char **msg)
{
  for (unsigned i = 0; i < n; i++) {
    const pp_st_tensor *w = layers[i].weight;
    const pp_desc_linear *d = &desc->linear[i];
    g_autofree char *dims = pp_st_shape_string(w);
    if (d->has_dims && (w->shape[0] != d->out || w->shape[1] != d->in))
      return fail(msg, name,
                  "Linear layer %u: tensor '%s' is %s (out×in) but the description says "
                  "linear(%u,%u)",
                  i + 1, w->name, dims, d->in, d->out);
    if (i > 0 && w->shape[1] != layers[i - 1].weight->shape[0]) {
      g_autofree char *prev = pp_st_shape_string(layers[i - 1].weight);
      return fail(msg, name,
                  "the layers don't chain: Linear layer %u, '%s', is %s (out×in), so it takes "
                  "%" G_GUINT64_FORMAT " inputs, but layer %u, '%s', is %s and gives "
                  "%" G_GUINT64_FORMAT,
                  i + 1, w->name, dims, w->shape[1], i, layers[i - 1].weight->name, prev,
                  layers[i - 1].weight->shape[0]);
    }
  }
  return 0;
}

int
pp_model_parse(const uint8_t *bytes, size_t len, const char *name, const char *layers_property,
               pp_hidden_activation hidden, pp_model **out, char **msg)
{
  pp_safetensors *st = NULL;
  char *reason = NULL;
  if (pp_safetensors_parse(bytes, len, &st, &reason) < 0) {
    fail(msg, name, "%s", reason);
    g_free(reason);
    return -EINVAL;
  }
  linear_layer layers[PP_MAX_LAYERS] = { { 0 } };
  unsigned n = 0;
  pp_model_desc desc;
  char *assumed = NULL;
  int rc = find_layers(st, name, layers, &n, msg);
  for (unsigned l = 0; l < n && rc == 0; l++)
    rc = check_layer(&layers[l], name, msg);
  if (rc == 0)
    rc = describe(st, name, layers_property, hidden, layers, n, &desc, &assumed, msg);
  if (rc == 0)
    rc = check_against(name, layers, n, &desc, msg);
  if (rc == 0) {
    pp_model *m = g_new0(pp_model, 1);
    m->n_layers = n;
    for (unsigned l = 0; l < n; l++) {
      pp_layer *layer = &m->layers[l];
      layer->out = layers[l].weight->shape[0];
      layer->in = layers[l].weight->shape[1];
      layer->w = to_f32(layers[l].weight);
      layer->b = to_f32(layers[l].bias);
      layer->act = desc.linear[l].act;
      layer->name = g_strdup(layers[l].weight->name);
    }
    m->k = m->layers[0].in;
    m->o = m->layers[n - 1].out;
    m->stored = stored_type(layers, n);
    m->source = g_strdup(name);
    m->assumed = assumed;
    m->nonfinite = describe_nonfinite(m);
    m->id = pp_model_new_id();
    *out = m;
  } else {
    g_free(assumed);
  }
  pp_safetensors_free(st);
  return rc;
}

int
pp_model_load(const char *path, const char *layers, pp_hidden_activation hidden, pp_model **out,
              char **msg)
{
  uint8_t *bytes = NULL;
  size_t len = 0;
  char *reason = NULL;
  int rc = pp_read_whole_file(path, &bytes, &len, &reason);
  if (rc < 0) {
    fail(msg, path, "%s", reason);
    g_free(reason);
    return rc;
  }
  rc = pp_model_parse(bytes, len, path, layers, hidden, out, msg);
  g_free(bytes);
  return rc;
}

uint32_t
pp_model_max_hidden(const pp_model *model)
{
  uint32_t widest = 0;
  for (unsigned l = 0; l + 1 < model->n_layers; l++)
    widest = MAX(widest, model->layers[l].out);
  return widest;
}

char *
pp_model_describe(const pp_model *model)
{
  GString *text = g_string_new(NULL);
  for (unsigned l = 0; l < model->n_layers; l++) {
    const pp_layer *layer = &model->layers[l];
    g_string_append_printf(text, "%slinear(%u,%u)", l ? ", " : "", layer->in, layer->out);
    if (layer->act.kind != PP_ACT_IDENTITY) {
      g_autofree char *act = pp_act_to_string(layer->act);
      g_string_append_printf(text, ", %s", act);
    }
  }
  return g_string_free(text, FALSE);
}

char *
pp_model_fingerprint(const pp_model *model)
{
  GChecksum *sum = g_checksum_new(G_CHECKSUM_SHA256);
  g_autofree char *desc = pp_model_describe(model);
  g_checksum_update(sum, (const guchar *) desc, -1);
  for (unsigned l = 0; l < model->n_layers; l++) {
    const pp_layer *layer = &model->layers[l];
    const guchar has_bias = layer->b != NULL;
    g_checksum_update(sum, &has_bias, 1);
    g_checksum_update(sum, (const guchar *) layer->w,
                      (gssize) ((size_t) layer->out * layer->in * sizeof(float)));
    if (layer->b)
      g_checksum_update(sum, (const guchar *) layer->b, (gssize) (layer->out * sizeof(float)));
  }
  char *digest = g_strdup(g_checksum_get_string(sum));
  g_checksum_free(sum);
  return digest;
}

int
pp_model_check_inputs(const pp_model *model, uint32_t k, char **msg)
{
  if (k == model->k)
    return 0;
  const pp_layer *first = &model->layers[0];
  return fail(msg, model->source, "tensor '%s' is %u×%u but the frame gives K=%u", first->name,
              first->out, first->in, k);
}

void
pp_model_free(pp_model *model)
{
  if (!model)
    return;
  free_layers(model);
  g_free(model->source);
  g_free(model->assumed);
  g_free(model->nonfinite);
  g_free(model);
}
