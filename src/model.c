#include "model.h"

#include <errno.h>
#include <glib.h>
#include <math.h>
#include <string.h>

#include "uring_io.h"
#include "safetensors.h"

/* Large enough for any frame this project maps, small enough that sizes in
 * bytes never overflow. */
#define MAX_DIM (1u << 24)

static const char expected_layout[] =
    "expected the state_dict of nn.Sequential(nn.Linear(K, D), [nn.ReLU(),] nn.Linear(D, O), "
    "nn.ReLU()), e.g. 0.weight, 0.bias, 2.weight, 2.bias";

typedef struct {
  long index;
  const pp_st_tensor *weight, *bias;
} linear_layer;

static uint64_t
new_model_id(void)
{
  static GMutex lock;
  static uint64_t next_id = 1;
  g_mutex_lock(&lock);
  const uint64_t id = next_id++;
  g_mutex_unlock(&lock);
  return id;
}

static int fail(char **msg, const char *source, const char *fmt, ...) G_GNUC_PRINTF(3, 4);

static int
fail(char **msg, const char *source, const char *fmt, ...)
{
  if (msg) {
    va_list args;
    va_start(args, fmt);
    g_autofree char *text = g_strdup_vprintf(fmt, args);
    va_end(args);
    *msg = g_strdup_printf("%s: %s", source, text);
  }
  return -EINVAL;
}

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
find_layers(const pp_safetensors *st, const char *source, linear_layer layers[2], char **msg)
{
  g_autofree char *prefix = NULL;
  const char *prefix_owner = NULL;
  size_t n_layers = 0;

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
    for (size_t l = 0; l < n_layers; l++)
      if (layers[l].index == index)
        layer = &layers[l];
    if (!layer) {
      if (n_layers == 2)
        return fail(msg, source,
                    "tensor '%s' belongs to a third layer; the model has exactly two Linear "
                    "layers (%s)",
                    t->name, expected_layout);
      layer = &layers[n_layers++];
      *layer = (linear_layer){ .index = index };
    }
    if (is_bias)
      layer->bias = t;
    else
      layer->weight = t;
  }
  if (n_layers < 2)
    return fail(msg, source, "the file holds one layer (%s%ld); %s", prefix, layers[0].index,
                expected_layout);
  if (layers[0].index > layers[1].index) {
    const linear_layer first = layers[1];
    layers[1] = layers[0];
    layers[0] = first;
  }
  for (size_t l = 0; l < 2; l++)
    if (!layers[l].weight)
      return fail(msg, source, "missing tensor '%s%ld.weight' (its bias is there)", prefix,
                  layers[l].index);
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
    if (t->shape[i] == 0 || t->shape[i] > MAX_DIM)
      return fail(msg, source, "tensor '%s' has dimension %" G_GUINT64_FORMAT "; expected 1..%u",
                  t->name, t->shape[i], MAX_DIM);
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

int
pp_model_parse(const uint8_t *bytes, size_t len, const char *name, pp_hidden_activation hidden,
               pp_model **out, char **msg)
{
  pp_safetensors *st = NULL;
  char *reason = NULL;
  if (pp_safetensors_parse(bytes, len, &st, &reason) < 0) {
    fail(msg, name, "%s", reason);
    g_free(reason);
    return -EINVAL;
  }
  linear_layer layers[2] = { { 0 } };
  int rc = find_layers(st, name, layers, msg);
  for (int l = 0; l < 2 && rc == 0; l++)
    rc = check_layer(&layers[l], name, msg);
  if (rc == 0 && layers[1].weight->shape[1] != layers[0].weight->shape[0]) {
    g_autofree char *dims0 = pp_st_shape_string(layers[0].weight);
    g_autofree char *dims1 = pp_st_shape_string(layers[1].weight);
    rc = fail(msg, name,
              "the layers don't chain: '%s' is %s (D×K), so the second layer needs D = "
              "%" G_GUINT64_FORMAT " inputs, but '%s' is %s (O×D)",
              layers[0].weight->name, dims0, layers[0].weight->shape[0], layers[1].weight->name,
              dims1);
  }
  if (rc == 0) {
    pp_model *m = g_new0(pp_model, 1);
    m->d = layers[0].weight->shape[0];
    m->k = layers[0].weight->shape[1];
    m->o = layers[1].weight->shape[0];
    m->hidden_relu = hidden == PP_HIDDEN_AUTO ? layers[1].index - layers[0].index >= 2
                                              : hidden == PP_HIDDEN_RELU;
    m->w0 = to_f32(layers[0].weight);
    m->b0 = to_f32(layers[0].bias);
    m->w1 = to_f32(layers[1].weight);
    m->b1 = to_f32(layers[1].bias);
    m->source = g_strdup(name);
    m->w0_name = g_strdup(layers[0].weight->name);
    m->w1_name = g_strdup(layers[1].weight->name);
    m->id = new_model_id();
    *out = m;
  }
  pp_safetensors_free(st);
  return rc;
}

int
pp_model_load(const char *path, pp_hidden_activation hidden, pp_model **out, char **msg)
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
  rc = pp_model_parse(bytes, len, path, hidden, out, msg);
  g_free(bytes);
  return rc;
}

/* splitmix64: a tiny, well-mixed generator, so the same dimensions give the
 * same weights on every machine. */
static uint64_t
splitmix64(uint64_t *state)
{
  uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

static float *
uniform(uint64_t *state, size_t count, float bound)
{
  float *values = g_new(float, count);
  for (size_t i = 0; i < count; i++) {
    const double unit = (splitmix64(state) >> 11) * (1.0 / 9007199254740992.0); /* [0, 1) */
    values[i] = (float) ((2.0 * unit - 1.0) * bound);
  }
  return values;
}

int
pp_model_generate(uint32_t k, uint32_t d, uint32_t o, pp_hidden_activation hidden, pp_model **out)
{
  if (k == 0 || d == 0 || o == 0 || k > MAX_DIM || d > MAX_DIM || o > MAX_DIM)
    return -EINVAL;
  uint64_t state = (uint64_t) k * 0x100000001B3ull ^ (uint64_t) d << 21 ^ (uint64_t) o << 42;
  pp_model *m = g_new0(pp_model, 1);
  m->k = k;
  m->d = d;
  m->o = o;
  m->hidden_relu = hidden == PP_HIDDEN_RELU;
  m->w0 = uniform(&state, (size_t) d * k, 1.0f / sqrtf(k));
  m->b0 = uniform(&state, d, 1.0f / sqrtf(k));
  m->w1 = uniform(&state, (size_t) o * d, 1.0f / sqrtf(d));
  m->b1 = uniform(&state, o, 1.0f / sqrtf(d));
  m->source = g_strdup("generated");
  m->w0_name = g_strdup("0.weight");
  m->w1_name = g_strdup(m->hidden_relu ? "2.weight" : "1.weight");
  m->id = new_model_id();
  *out = m;
  return 0;
}

int
pp_model_check_inputs(const pp_model *model, uint32_t k, char **msg)
{
  if (k == model->k)
    return 0;
  return fail(msg, model->source, "tensor '%s' is %u×%u but the frame gives K=%u", model->w0_name,
              model->d, model->k, k);
}

void
pp_model_free(pp_model *model)
{
  if (!model)
    return;
  g_free(model->w0);
  g_free(model->b0);
  g_free(model->w1);
  g_free(model->b1);
  g_free(model->source);
  g_free(model->w0_name);
  g_free(model->w1_name);
  g_free(model);
}
