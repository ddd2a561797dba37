// SPDX-License-Identifier: LGPL-2.1-or-later
/* The model description's grammar: parsed and printed. */
#include "model_desc.h"
#include "error.h"

#include <errno.h>
#include <glib.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const struct {
  const char *name; /* lower case, underscores dropped */
  pp_act_kind kind;
} act_names[] = {
  { "relu", PP_ACT_RELU }, { "leakyrelu", PP_ACT_LEAKY_RELU },
  { "gelu", PP_ACT_GELU }, { "gelutanh", PP_ACT_GELU_TANH },
  { "silu", PP_ACT_SILU }, { "sigmoid", PP_ACT_SIGMOID },
  { "tanh", PP_ACT_TANH }, { "identity", PP_ACT_IDENTITY },
};

static const char *const spelled[PP_N_ACTS] = {
  [PP_ACT_IDENTITY] = "identity",     [PP_ACT_RELU] = "relu",
  [PP_ACT_LEAKY_RELU] = "leaky_relu", [PP_ACT_GELU] = "gelu",
  [PP_ACT_GELU_TANH] = "gelu_tanh",   [PP_ACT_SILU] = "silu",
  [PP_ACT_SIGMOID] = "sigmoid",       [PP_ACT_TANH] = "tanh",
};

char *
pp_act_to_string(pp_act act)
{
  if (act.kind == PP_ACT_LEAKY_RELU)
    return g_strdup_printf("leaky_relu(%g)", act.slope);
  return g_strdup(act.kind < PP_N_ACTS ? spelled[act.kind] : "?");
}

/* One module as written: a name and up to two arguments. */
typedef struct {
  char name[32];
  char *args[2];
  unsigned n_args;
} module;

static void
skip_spaces(const char **p)
{
  while (g_ascii_isspace(**p))
    (*p)++;
}

/* Reads `name [ "(" arg ["," arg] ")" ]` at *p; the name lower-cased with
 * underscores dropped. */
static int
read_module(const char **p, unsigned position, module *m, char **msg)
{
  skip_spaces(p);
  size_t len = 0;
  while (g_ascii_isalnum(**p) || **p == '_') {
    if (**p != '_' && len + 1 < sizeof m->name)
      m->name[len++] = g_ascii_tolower(**p);
    (*p)++;
  }
  m->name[len] = '\0';
  if (len == 0)
    return pp_error(msg, EINVAL, "module %u: expected a name such as linear or relu, found '%.20s'",
                    position, *p);
  skip_spaces(p);
  if (**p != '(')
    return 0;
  (*p)++;
  for (;;) {
    skip_spaces(p);
    const char *start = *p;
    while (**p && **p != ',' && **p != ')' && !g_ascii_isspace(**p))
      (*p)++;
    if (*p == start || m->n_args == G_N_ELEMENTS(m->args))
      return pp_error(msg, EINVAL, "module %u (%s): malformed arguments", position, m->name);
    m->args[m->n_args++] = g_strndup(start, *p - start);
    skip_spaces(p);
    if (**p == ')')
      break;
    if (**p != ',')
      return pp_error(msg, EINVAL, "module %u (%s): missing ')'", position, m->name);
    (*p)++;
  }
  (*p)++;
  return 0;
}

static bool
parse_width(const char *text, uint32_t *value)
{
  char *end = NULL;
  const unsigned long long v = g_ascii_strtoull(text, &end, 10);
  if (!end || *end || v == 0 || v > (1u << 24) || !g_ascii_isdigit(*text))
    return false;
  *value = (uint32_t) v;
  return true;
}

static int
read_linear(const module *m, unsigned position, pp_model_desc *d, char **msg)
{
  if (d->n_linear == PP_MAX_LAYERS)
    return pp_error(msg, EINVAL, "module %u: more than %d Linear layers", position, PP_MAX_LAYERS);
  pp_desc_linear *l = &d->linear[d->n_linear++];
  l->act = (pp_act){ PP_ACT_IDENTITY, 0.0f };
  if (m->n_args == 0)
    return 0;
  if (m->n_args != 2 || !parse_width(m->args[0], &l->in) || !parse_width(m->args[1], &l->out))
    return pp_error(msg, EINVAL,
                    "module %u (linear): expected linear or linear(IN,OUT) with widths 1..%u",
                    position, 1u << 24);
  l->has_dims = true;
  return 0;
}

static int
read_activation(const module *m, unsigned position, pp_act *act, char **msg)
{
  for (size_t i = 0; i < G_N_ELEMENTS(act_names); i++) {
    if (strcmp(m->name, act_names[i].name) != 0)
      continue;
    *act = (pp_act){ act_names[i].kind, 0.0f };
    if (act->kind == PP_ACT_LEAKY_RELU) {
      act->slope = 0.01f; /* nn.LeakyReLU's default */
      if (m->n_args == 1) {
        char *end = NULL;
        const double slope = g_ascii_strtod(m->args[0], &end);
        if (!end || *end || !isfinite(slope))
          return pp_error(msg, EINVAL, "module %u (leaky_relu): the slope '%s' is not a number",
                          position, m->args[0]);
        act->slope = (float) slope;
        return 0;
      }
    } else if (act->kind == PP_ACT_GELU && m->n_args == 1) {
      if (g_ascii_strcasecmp(m->args[0], "tanh") == 0 ||
          g_ascii_strcasecmp(m->args[0], "'tanh'") == 0) {
        act->kind = PP_ACT_GELU_TANH;
        return 0;
      }
      if (g_ascii_strcasecmp(m->args[0], "none") == 0 ||
          g_ascii_strcasecmp(m->args[0], "'none'") == 0)
        return 0;
      return pp_error(msg, EINVAL, "module %u (gelu): approximate is 'none' or 'tanh', not '%s'",
                      position, m->args[0]);
    }
    if (m->n_args != 0)
      return pp_error(msg, EINVAL, "module %u (%s) takes no arguments", position, m->name);
    return 0;
  }
  return pp_error(msg, EINVAL,
                  "module %u: unknown module '%s'; expected linear, relu, leaky_relu, gelu, "
                  "gelu_tanh, silu, sigmoid, tanh or identity",
                  position, m->name);
}

static int
parse(const char **p, pp_model_desc *d, char **msg)
{
  for (unsigned position = 1;; position++) {
    module m = { .n_args = 0 };
    int rc = read_module(p, position, &m, msg);
    if (rc == 0 && strcmp(m.name, "linear") == 0) {
      rc = read_linear(&m, position, d, msg);
    } else if (rc == 0) {
      pp_act act;
      rc = read_activation(&m, position, &act, msg);
      if (rc == 0 && d->n_linear == 0)
        rc =
            pp_error(msg, EINVAL, "module %u (%s) comes before any Linear layer", position, m.name);
      pp_act *slot = rc == 0 ? &d->linear[d->n_linear - 1].act : NULL;
      if (rc == 0 && act.kind != PP_ACT_IDENTITY) {
        if (slot->kind != PP_ACT_IDENTITY)
          rc = pp_error(msg, EINVAL,
                        "module %u (%s): Linear layer %u already has an activation; one per layer "
                        "is supported",
                        position, m.name, d->n_linear);
        else
          *slot = act;
      }
    }
    for (unsigned i = 0; i < m.n_args; i++)
      g_free(m.args[i]);
    if (rc < 0)
      return rc;
    skip_spaces(p);
    if (**p == '\0')
      return 0;
    if (**p != ',')
      return pp_error(msg, EINVAL, "after module %u: expected ',' or the end, found '%.20s'",
                      position, *p);
    (*p)++;
  }
}

int
pp_model_desc_parse(const char *text, pp_model_desc *out, char **msg)
{
  pp_model_desc d = { 0 };
  const char *p = text ? text : "";
  int rc = parse(&p, &d, msg);
  if (rc == 0 && d.n_linear == 0)
    rc = pp_error(msg, EINVAL, "no Linear layer");
  for (unsigned i = 1; rc == 0 && i < d.n_linear; i++)
    if (d.linear[i].has_dims && d.linear[i - 1].has_dims && d.linear[i].in != d.linear[i - 1].out)
      rc = pp_error(msg, EINVAL, "Linear layer %u takes %u inputs but layer %u gives %u", i + 1,
                    d.linear[i].in, i, d.linear[i - 1].out);
  if (rc == 0)
    *out = d;
  return rc;
}
