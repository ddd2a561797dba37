/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The plan line: printing and parsing (plan.h has the grammar). */
#include "cuda_plan.h"
#include "error.h"

#include <errno.h>
#include <glib.h>
#include <string.h>

static const pp_cuda_path_info paths[PP_N_PATHS] = {
  [PP_PATH_FUSED] = { "fused", true, false, 0, PP_TUNE_NOTHING },
  [PP_PATH_SMALL] = { "small", true, false, 1u << 1 | 1u << 2 | 1u << 4 | 1u << 8,
                      PP_TUNE_SMALL_ROWS },
  [PP_PATH_WIDE] = { "wide", true, false, 0, PP_TUNE_NOTHING },
  [PP_PATH_WARP] = { "warp", true, false, 0, PP_TUNE_NOTHING },
  [PP_PATH_OWN] = { "own", false, true, 0, PP_TUNE_NOTHING },
  [PP_PATH_OWN_64] = { "own64", false, true, 0, PP_TUNE_NOTHING },
  [PP_PATH_CUBLAS] = { "cublas", false, true, 0, PP_TUNE_GEMM },
  [PP_PATH_SPLIT] = { "split", false, true, 1u << 1 | 1u << 2, PP_TUNE_GEMM },
  [PP_PATH_ROWDOT] = { "rowdot", false, false, 0, PP_TUNE_NOTHING },
};

const pp_cuda_path_info *
pp_cuda_path_info_of(pp_cuda_path path)
{
  return path < PP_N_PATHS ? &paths[path] : NULL;
}

bool
pp_cuda_path_tunes_gemm(pp_cuda_path path)
{
  return path < PP_N_PATHS && paths[path].tuning == PP_TUNE_GEMM;
}

const char *
pp_cuda_path_name(pp_cuda_path path)
{
  return path < PP_N_PATHS ? paths[path].name : "?";
}

bool
pp_cuda_path_is_whole(pp_cuda_path path)
{
  return path < PP_N_PATHS && paths[path].whole;
}

bool
pp_cuda_plan_uses_cublas(const pp_cuda_plan *plan)
{
  if (plan->whole != PP_N_PATHS)
    return false;
  for (unsigned i = 0; i < plan->n_layers; i++)
    if (pp_cuda_path_tunes_gemm(plan->layers[i].path))
      return true;
  return false;
}

/* ---- printing ------------------------------------------------------------ */

/* The attributes that are not at their defaults (splitk 1, the rest 0). */
static void
append_algo(GString *s, const pp_gemm_algo *a)
{
  g_string_append_printf(s, "id%d", a->id);
  const struct {
    const char *name;
    int64_t value, fallback;
  } attrs[] = {
    { "tile", a->tile, 0 },           { "stages", a->stages, 0 },   { "splitk", a->splitk, 1 },
    { "reduction", a->reduction, 0 }, { "swizzle", a->swizzle, 0 }, { "custom", a->custom, 0 },
    { "inner", a->inner, 0 },         { "cluster", a->cluster, 0 },
  };
  for (size_t i = 0; i < G_N_ELEMENTS(attrs); i++)
    if (attrs[i].value != attrs[i].fallback)
      g_string_append_printf(s, ".%s%" G_GINT64_FORMAT, attrs[i].name, attrs[i].value);
}

/* A path's name, and its count where it has one. */
static void
append_path(GString *s, pp_cuda_path path, unsigned count)
{
  g_string_append(s, pp_cuda_path_name(path));
  if (paths[path].counts && count)
    g_string_append_printf(s, ":%u", count);
}

static void
append_kernels(GString *s, const pp_cuda_plan *plan)
{
  if (plan->whole != PP_N_PATHS) {
    append_path(s, plan->whole, plan->small_rows);
    return;
  }
  for (unsigned i = 0; i < plan->n_layers; i++) {
    g_string_append(s, i ? "+" : "");
    append_path(s, plan->layers[i].path, plan->layers[i].pieces);
  }
}

char *
pp_cuda_plan_to_line(const pp_cuda_plan *plan)
{
  GString *s = g_string_new(NULL);
  if (plan->given & PP_PLAN_KERNELS) {
    g_string_append(s, "kernels=");
    append_kernels(s, plan);
  }
  if (plan->given & PP_PLAN_FRAMES) {
    g_string_append_printf(s, "%sframes=", s->len ? " " : "");
    if (plan->frames == PP_FRAMES_CHUNKS)
      g_string_append_printf(s, "chunks:%u", plan->chunks);
    else
      g_string_append(s, plan->frames == PP_FRAMES_IN_PLACE ? "in-place" : "whole");
  }
  if (plan->given & PP_PLAN_GRAPHS)
    g_string_append_printf(s, "%sgraphs=%s", s->len ? " " : "", plan->graphs ? "on" : "off");
  if (plan->given & PP_PLAN_SIGNAL)
    g_string_append_printf(s, "%ssignal=%s", s->len ? " " : "", plan->signal ? "on" : "off");
  if (plan->given & PP_PLAN_COMPLETION)
    g_string_append_printf(s, "%scompletion=%s", s->len ? " " : "",
                           plan->completion == PP_COMPLETION_EVENT_THREAD ? "event-thread"
                                                                          : "consumer");
  for (unsigned i = 0; i < plan->n_layers && plan->whole == PP_N_PATHS; i++) {
    const pp_layer_plan *l = &plan->layers[i];
    if (l->has_algo) {
      g_string_append_printf(s, "%sgemm%u=", s->len ? " " : "", i);
      append_algo(s, &l->algo);
    }
    if (l->has_chunk_algo) {
      g_string_append_printf(s, "%sgemm%u-chunk=", s->len ? " " : "", i);
      append_algo(s, &l->chunk_algo);
    }
  }
  return g_string_free(s, FALSE);
}

/* ---- parsing ------------------------------------------------------------- */

/* Every refusal here says where it comes from first. */
#define fail(msg, fmt, ...) pp_error(msg, EINVAL, "plan: " fmt, ##__VA_ARGS__)

/* "name:N" or "name": N into *count, 0 when absent. */
static bool
split_count(const char *token, const char *name, unsigned *count)
{
  const size_t len = strlen(name);
  if (strncmp(token, name, len) != 0)
    return false;
  guint64 n = 0;
  if (token[len] == '\0') {
    *count = 0;
    return true;
  }
  if (token[len] != ':' || !g_ascii_string_to_unsigned(token + len + 1, 10, 1, 64, &n, NULL))
    return false;
  *count = (unsigned) n;
  return true;
}

/* The counts a path takes, for its error: "1, 2, 4 or 8". */
static char *
counts_text(unsigned counts)
{
  GString *s = g_string_new(NULL);
  const unsigned n = (unsigned) __builtin_popcount(counts);
  unsigned seen = 0;
  for (unsigned c = 1; c < 32; c++)
    if (counts & 1u << c) {
      seen++;
      g_string_append_printf(s, "%s%u", seen == 1 ? "" : seen == n ? " or " : ", ", c);
    }
  return g_string_free(s, FALSE);
}

/* `token` as one path of `whole` kind (a whole-MLP kernel, or a layer's):
 * *path and *count set; 0, -ENOENT for no such name, or -EINVAL (*msg)
 * for a count the path does not take. */
static int
parse_path(const char *token, const char *value, bool whole, pp_cuda_path *path, unsigned *count,
           char **msg)
{
  for (int p = 0; p < PP_N_PATHS; p++) {
    const pp_cuda_path_info *info = &paths[p];
    unsigned n = 0;
    if (info->whole != whole || !split_count(token, info->name, &n) ||
        (n == 0 && strcmp(token, info->name) != 0))
      continue;
    /* With counts, the name alone is "tuned" for a whole kernel, and not
     * a choice for a layer's (split needs its pieces). */
    const bool bare_ok = whole || !info->counts;
    if ((n == 0 && !bare_ok) || (n != 0 && !(n < 32 && info->counts & 1u << n))) {
      g_autofree char *takes = counts_text(info->counts);
      if (!info->counts)
        return fail(msg, "kernels=%s: %s takes no count", value, info->name);
      return fail(msg, "kernels=%s: %s takes %s%s (%s:%u)", value, info->name, takes,
                  info->tuning == PP_TUNE_SMALL_ROWS ? " rows a block" : " pieces", info->name,
                  whole ? 4u : 2u);
    }
    *path = (pp_cuda_path) p;
    *count = n;
    return 0;
  }
  return -ENOENT;
}

/* The whole-MLP kernels' names and the layers', for the error. */
static char *
names_text(void)
{
  GString *layers = g_string_new(NULL), *whole = g_string_new(NULL);
  for (int p = 0; p < PP_N_PATHS; p++) {
    GString *to = paths[p].whole ? whole : layers;
    g_string_append_printf(to, "%s%s%s", to->len ? ", " : "", paths[p].name,
                           paths[p].counts ? (paths[p].whole ? ":R" : ":P") : "");
  }
  char *text = g_strdup_printf("%s (or %s for the whole MLP)", layers->str, whole->str);
  g_string_free(layers, TRUE);
  g_string_free(whole, TRUE);
  return text;
}

static int
parse_kernels(const char *value, pp_cuda_plan *plan, char **msg)
{
  unsigned n = 0;
  pp_cuda_path path;
  plan->whole = PP_N_PATHS;
  int rc = parse_path(value, value, true, &path, &n, msg);
  if (rc == 0) {
    plan->whole = path;
    plan->small_rows = n;
    return 0;
  }
  if (rc != -ENOENT)
    return rc;
  g_auto(GStrv) names = g_strsplit(value, "+", -1);
  const unsigned count = g_strv_length(names);
  if (count < 1 || count > PP_MAX_LAYERS)
    return fail(msg, "kernels=%s: give one entry per Linear layer (1 to %d)", value, PP_MAX_LAYERS);
  plan->n_layers = count;
  for (unsigned i = 0; i < count; i++) {
    pp_layer_plan *l = &plan->layers[i];
    rc = parse_path(names[i], value, false, &l->path, &l->pieces, msg);
    if (rc == -ENOENT) {
      g_autofree char *known = names_text();
      return fail(msg, "kernels=%s: '%s' is not one of %s", value, names[i], known);
    }
    if (rc < 0)
      return rc;
  }
  return 0;
}

static int
parse_frames(const char *value, pp_cuda_plan *plan, char **msg)
{
  unsigned n = 0;
  if (strcmp(value, "whole") == 0) {
    plan->frames = PP_FRAMES_WHOLE;
  } else if (strcmp(value, "in-place") == 0) {
    plan->frames = PP_FRAMES_IN_PLACE;
  } else if (split_count(value, "chunks", &n) && n >= 2 && n <= PP_MAX_CHUNKS) {
    plan->frames = PP_FRAMES_CHUNKS;
    plan->chunks = n;
  } else {
    return fail(msg, "frames=%s: give whole, in-place or chunks:C with C in 2..%d", value,
                PP_MAX_CHUNKS);
  }
  return 0;
}

static int
parse_switch(const char *key, const char *value, bool *out, char **msg)
{
  if (strcmp(value, "on") != 0 && strcmp(value, "off") != 0)
    return fail(msg, "%s=%s: give on or off", key, value);
  *out = value[1] == 'n';
  return 0;
}

static int
parse_algo(const char *key, const char *value, pp_gemm_algo *a, char **msg)
{
  *a = (pp_gemm_algo){ .splitk = 1 };
  g_auto(GStrv) parts = g_strsplit(value, ".", -1);
  bool have_id = false;
  for (unsigned i = 0; parts[i]; i++) {
    static const char *const names[] = { "id",      "tile",   "stages", "splitk", "reduction",
                                         "swizzle", "custom", "inner",  "cluster" };
    size_t which = G_N_ELEMENTS(names);
    for (size_t j = 0; j < G_N_ELEMENTS(names); j++)
      if (g_str_has_prefix(parts[i], names[j]) &&
          (g_ascii_isdigit(parts[i][strlen(names[j])]) || parts[i][strlen(names[j])] == '-'))
        which = j;
    gint64 n = 0;
    /* Only splitk may be negative (cuBLAS's own choice). */
    if (which == G_N_ELEMENTS(names) ||
        !g_ascii_string_to_signed(parts[i] + strlen(names[which]), 10, which == 3 ? -1 : 0,
                                  which >= 7 ? G_MAXUINT16 : G_MAXINT32, &n, NULL))
      return fail(msg,
                  "%s=%s: '%s' is not an attribute (id, tile, stages, splitk, reduction, "
                  "swizzle, custom, inner, cluster) followed by a number",
                  key, value, parts[i]);
    const uint32_t v = (uint32_t) n;
    switch (which) {
      case 0:
        a->id = (int32_t) n, have_id = true;
        break;
      case 1:
        a->tile = v;
        break;
      case 2:
        a->stages = v;
        break;
      case 3:
        a->splitk = (int32_t) n;
        break;
      case 4:
        a->reduction = v;
        break;
      case 5:
        a->swizzle = v;
        break;
      case 6:
        a->custom = v;
        break;
      case 7:
        a->inner = (uint16_t) v;
        break;
      default:
        a->cluster = (uint16_t) v;
        break;
    }
  }
  if (!have_id)
    return fail(msg, "%s=%s: the algorithm needs its id (id21)", key, value);
  return 0;
}

/* "gemmI" or "gemmI-chunk": layer I's algorithm. */
static int
parse_gemm(const char *key, const char *value, pp_cuda_plan *plan, char **msg)
{
  const char *digits = key + strlen("gemm");
  char *end = NULL;
  const unsigned long layer = strtoul(digits, &end, 10);
  const bool chunk = end && strcmp(end, "-chunk") == 0;
  if (end == digits || (*end && !chunk) || layer >= PP_MAX_LAYERS)
    return fail(msg, "'%s' is not gemmI or gemmI-chunk with I a layer from 0", key);
  pp_layer_plan *l = &plan->layers[layer];
  if (layer >= plan->n_layers)
    plan->n_layers = (unsigned) layer + 1;
  if (chunk) {
    l->has_chunk_algo = true;
    return parse_algo(key, value, &l->chunk_algo, msg);
  }
  l->has_algo = true;
  return parse_algo(key, value, &l->algo, msg);
}

static int
parse_part(const char *key, const char *value, pp_cuda_plan *plan, unsigned *kernel_layers,
           char **msg)
{
  if (strcmp(key, "kernels") == 0) {
    plan->given |= PP_PLAN_KERNELS;
    pp_cuda_plan kernels = { .whole = PP_N_PATHS };
    const int rc = parse_kernels(value, &kernels, msg);
    for (unsigned i = 0; i < kernels.n_layers; i++) {
      plan->layers[i].path = kernels.layers[i].path;
      plan->layers[i].pieces = kernels.layers[i].pieces;
    }
    plan->whole = kernels.whole;
    plan->small_rows = kernels.small_rows;
    *kernel_layers = kernels.n_layers;
    return rc;
  }
  if (strcmp(key, "frames") == 0) {
    plan->given |= PP_PLAN_FRAMES;
    return parse_frames(value, plan, msg);
  }
  if (strcmp(key, "graphs") == 0) {
    plan->given |= PP_PLAN_GRAPHS;
    return parse_switch(key, value, &plan->graphs, msg);
  }
  if (strcmp(key, "signal") == 0) {
    plan->given |= PP_PLAN_SIGNAL;
    return parse_switch(key, value, &plan->signal, msg);
  }
  if (strcmp(key, "completion") == 0) {
    plan->given |= PP_PLAN_COMPLETION;
    if (strcmp(value, "consumer") == 0)
      plan->completion = PP_COMPLETION_CONSUMER;
    else if (strcmp(value, "event-thread") == 0)
      plan->completion = PP_COMPLETION_EVENT_THREAD;
    else
      return fail(msg, "completion=%s: give consumer or event-thread", value);
    return 0;
  }
  if (g_str_has_prefix(key, "gemm"))
    return parse_gemm(key, value, plan, msg);
  return fail(msg, "'%s' is not one of kernels, frames, graphs, signal, completion, gemmI", key);
}

int
pp_cuda_plan_parse(const char *line, pp_cuda_plan *plan, char **msg)
{
  *plan = (pp_cuda_plan){ .whole = PP_N_PATHS, .graphs = true, .signal = true };
  g_auto(GStrv) tokens = g_strsplit_set(line ? line : "", " \t\n", -1);
  unsigned kernel_layers = 0;
  for (unsigned i = 0; tokens[i]; i++) {
    if (!*tokens[i])
      continue;
    const char *eq = strchr(tokens[i], '=');
    if (!eq || eq == tokens[i] || !eq[1])
      return fail(msg, "'%s' is not key=value", tokens[i]);
    g_autofree char *key = g_strndup(tokens[i], eq - tokens[i]);
    const int rc = parse_part(key, eq + 1, plan, &kernel_layers, msg);
    if (rc < 0)
      return rc;
  }
  if ((plan->given & PP_PLAN_KERNELS) && plan->whole == PP_N_PATHS) {
    if (plan->n_layers > kernel_layers)
      return fail(msg, "gemm%u names a layer past the %u of kernels=", plan->n_layers - 1,
                  kernel_layers);
    plan->n_layers = kernel_layers;
  }
  return 0;
}
