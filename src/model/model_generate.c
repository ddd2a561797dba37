// SPDX-License-Identifier: LGPL-2.1-or-later
/* Models made from widths alone: weights drawn from a fixed generator
 * seeded by the widths, so the same dimensions give the same model on
 * every machine (the benchmarks' workloads, and tests that need no file). */
#include "model.h"
#include "error.h"
#include "model_priv.h"

#include <errno.h>
#include <glib.h>
#include <math.h>

/* splitmix64: a tiny, well-mixed generator of 64-bit words. */
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
pp_model_generate_layers(uint32_t k, unsigned n_layers, const uint32_t *outs, const pp_act *acts,
                         pp_model **out)
{
  if (k == 0 || k > PP_MODEL_MAX_DIM || n_layers == 0 || n_layers > PP_MAX_LAYERS)
    return -EINVAL;
  for (unsigned l = 0; l < n_layers; l++)
    if (outs[l] == 0 || outs[l] > PP_MODEL_MAX_DIM || acts[l].kind >= PP_N_ACTS)
      return -EINVAL;
  /* The seed's two-layer networks keep the weights they always had. */
  uint64_t state = (uint64_t) k * 0x100000001B3ull ^ (uint64_t) outs[0] << 21 ^
                   (uint64_t) outs[n_layers - 1] << 42;
  for (unsigned l = 1; l + 1 < n_layers; l++)
    state = state * 0x9E3779B97F4A7C15ull ^ outs[l];
  pp_model *m = g_new0(pp_model, 1);
  m->n_layers = n_layers;
  uint32_t in = k;
  for (unsigned l = 0; l < n_layers; l++) {
    pp_layer *layer = &m->layers[l];
    layer->in = in;
    layer->out = outs[l];
    layer->act = acts[l];
    layer->w = uniform(&state, (size_t) layer->out * in, 1.0f / sqrtf(in));
    layer->b = uniform(&state, layer->out, 1.0f / sqrtf(in));
    layer->name = g_strdup_printf("%u.weight", 2 * l);
    in = outs[l];
  }
  m->k = k;
  m->o = outs[n_layers - 1];
  m->source = g_strdup("generated");
  m->id = pp_model_new_id();
  *out = m;
  return 0;
}

int
pp_model_generate_desc(uint32_t k, const pp_model_desc *desc, pp_model **out, char **msg)
{
  uint32_t outs[PP_MAX_LAYERS];
  pp_act acts[PP_MAX_LAYERS];
  for (unsigned l = 0; l < desc->n_linear; l++) {
    const pp_desc_linear *d = &desc->linear[l];
    if (!d->has_dims)
      return pp_error(msg, EINVAL,
                      "generated: Linear layer %u has no widths; generated weights need "
                      "linear(IN,OUT) for every layer",
                      l + 1);
    outs[l] = d->out;
    acts[l] = d->act;
  }
  if (desc->linear[0].in != k)
    return pp_error(msg, EINVAL,
                    "generated: the first Linear layer takes %u inputs but the frames give K=%u",
                    desc->linear[0].in, k);
  if (pp_model_generate_layers(k, desc->n_linear, outs, acts, out) < 0)
    return pp_error(msg, EINVAL, "generated: cannot generate these layers");
  return 0;
}

int
pp_model_generate(uint32_t k, uint32_t d, uint32_t o, pp_hidden_activation hidden, pp_model **out)
{
  const uint32_t outs[2] = { d, o };
  const pp_act acts[2] = { { hidden == PP_HIDDEN_RELU ? PP_ACT_RELU : PP_ACT_IDENTITY, 0.0f },
                           { PP_ACT_RELU, 0.0f } };
  return pp_model_generate_layers(k, 2, outs, acts, out);
}
