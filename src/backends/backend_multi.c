/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* One backend spread over several (one per GPU): slot i is slot i / n of
 * part i % n, so consecutive frames alternate between devices and the
 * engine, which sees one backend of n_slots slots, keeps them in order.
 * Each part owns its slots, streams and copy of the weights; nothing here
 * is shared between devices but the frames' pinned memory, registered
 * portable (every context may copy from it). */
#include <errno.h>
#include <glib.h>

#include "backend.h"

typedef struct multi_backend multi_backend;

/* What a part's completion callback gets: the way back to the global slot. */
typedef struct {
  multi_backend *multi;
  unsigned index;
} part_link;

struct multi_backend {
  pp_backend base;
  pp_backend_ops ops; /* multi_ops, with the parts' name */
  unsigned n_parts;
  pp_backend *parts[PP_MAX_DEVICES];
  part_link links[PP_MAX_DEVICES];
  int labels[PP_MAX_DEVICES];
  char *description;
  /* The parts' plans and keys joined by PLAN_SEPARATOR, device by device. */
  char *plan_line, *plan_key, *plan_refused;
  pp_plan_source plan_source;
  pp_startup_times startup;
  bool blas; /* some part's plan runs layers on cuBLASLt */
};

#define PLAN_SEPARATOR " | "

static pp_backend *
part_of(multi_backend *m, unsigned slot, unsigned *local)
{
  *local = slot / m->n_parts;
  return m->parts[slot % m->n_parts];
}

static void
on_part_complete(void *data, unsigned local, int status, const char *message, bool slot_free)
{
  part_link *link = data;
  multi_backend *m = link->multi;
  m->base.complete(m->base.complete_data, local * m->n_parts + link->index, status, message,
                   slot_free);
}

static const char *
part_detail(pp_backend *part)
{
  const char *d = part->ops->describe ? part->ops->describe(part) : NULL;
  return d ? d : "";
}

/* "cublas+rowdot, ... on devices 0,1" when every device runs alike, else
 * each device's own account; the first part's leads either way, as a single
 * backend's would (pingpong-bench reads the MLP path from the start). */
static char *
describe_parts(multi_backend *m)
{
  bool alike = true;
  for (unsigned i = 1; i < m->n_parts; i++)
    alike = alike && g_str_equal(part_detail(m->parts[i]), part_detail(m->parts[0]));
  GString *s = g_string_new(NULL);
  for (unsigned i = 0; i < m->n_parts; i++) {
    const char *detail = part_detail(m->parts[i]);
    if (alike && i > 0) {
      g_string_append_printf(s, ",%d", m->labels[i]);
      continue;
    }
    if (i > 0)
      g_string_append(s, " | ");
    g_string_append_printf(s, "%s%s%s %d", detail, *detail ? " on " : "",
                           alike ? "devices" : "device", m->labels[i]);
  }
  return g_string_free(s, FALSE);
}

char *
pp_backend_plan_part(const char *line, unsigned index)
{
  g_auto(GStrv) parts = g_strsplit(line ? line : "", PLAN_SEPARATOR, -1);
  return index < g_strv_length(parts) ? g_strdup(parts[index]) : NULL;
}

/* Part i's share of a request: the forced line as it is (every device
 * runs the same choice), the cached line's i-th part (*cached_part, to be
 * freed). */
static pp_plan_request
part_request(const pp_plan_request *request, unsigned i, char **cached_part)
{
  pp_plan_request part = { 0 };
  *cached_part = NULL;
  if (request) {
    part = *request;
    *cached_part = request->cached ? pp_backend_plan_part(request->cached, i) : NULL;
    part.cached = *cached_part;
  }
  return part;
}

/* The parts' plans as one: their lines joined, cached only if every part's
 * was, their start-up times added (the parts start one after another). */
static void
join_plans(multi_backend *m)
{
  GString *line = g_string_new(NULL);
  g_clear_pointer(&m->plan_refused, g_free);
  m->startup = (pp_startup_times){ 0 };
  m->plan_source = PP_PLAN_CACHED;
  m->blas = false;
  for (unsigned i = 0; i < m->n_parts; i++) {
    pp_plan_info info = { .line = "" };
    if (m->parts[i]->ops->plan_info)
      m->parts[i]->ops->plan_info(m->parts[i], &info);
    g_string_append_printf(line, "%s%s", i ? PLAN_SEPARATOR : "", info.line ? info.line : "");
    if (info.source != PP_PLAN_CACHED)
      m->plan_source = info.source;
    m->blas = m->blas || info.blas;
    if (info.refused && !m->plan_refused)
      m->plan_refused = g_strdup_printf("device %d: %s", m->labels[i], info.refused);
    double *sums[] = { &m->startup.open_ms,     &m->startup.library_ms, &m->startup.alloc_ms,
                       &m->startup.weights_ms,  &m->startup.plan_ms,    &m->startup.graphs_ms,
                       &m->startup.configure_ms };
    const double parts[] = { info.startup.open_ms,     info.startup.library_ms,
                             info.startup.alloc_ms,    info.startup.weights_ms,
                             info.startup.plan_ms,     info.startup.graphs_ms,
                             info.startup.configure_ms };
    for (size_t j = 0; j < G_N_ELEMENTS(parts); j++)
      *sums[j] += parts[j];
  }
  g_free(m->plan_line);
  m->plan_line = g_string_free(line, FALSE);
}

static int
multi_configure(pp_backend *base, const pp_model *model, const pp_frame_layout *layout,
                unsigned n_slots, const pp_plan_request *request, char **msg)
{
  multi_backend *m = (multi_backend *) base;
  if (n_slots < m->n_parts) {
    *msg = g_strdup_printf("slots=%u leaves %u of the %u devices without work; set slots to at "
                           "least %u (one per device)",
                           n_slots, m->n_parts - n_slots, m->n_parts, m->n_parts);
    return -EINVAL;
  }
  for (unsigned i = 0; i < m->n_parts; i++) {
    /* Slots i, i + n, i + 2n, ... */
    const unsigned count = (n_slots - i + m->n_parts - 1) / m->n_parts;
    g_autofree char *cached_part = NULL;
    const pp_plan_request part = part_request(request, i, &cached_part);
    char *why = NULL;
    const int rc = m->parts[i]->ops->configure(m->parts[i], model, layout, count,
                                               request ? &part : NULL, &why);
    if (rc < 0) {
      *msg = g_strdup_printf("device %d: %s", m->labels[i], why ? why : g_strerror(-rc));
      g_free(why);
      return rc;
    }
  }
  g_free(m->description);
  m->description = describe_parts(m);
  join_plans(m);
  return 0;
}

static void
multi_plan_info(pp_backend *base, pp_plan_info *info)
{
  multi_backend *m = (multi_backend *) base;
  *info = (pp_plan_info){ m->plan_line, m->plan_source, m->plan_refused, m->startup, m->blas };
}

static const char *
multi_plan_key(pp_backend *base)
{
  return ((multi_backend *) base)->plan_key;
}

static int
multi_submit(pp_backend *base, unsigned slot, const pp_job *job, char **msg)
{
  multi_backend *m = (multi_backend *) base;
  unsigned local;
  pp_backend *part = part_of(m, slot, &local);
  /* The engine reads the counters of the backend it holds: pass on what
   * this submit added to the part's. */
  const uint64_t staged = __atomic_load_n(&part->staged_inputs, __ATOMIC_RELAXED);
  const uint64_t on_device = __atomic_load_n(&part->device_inputs, __ATOMIC_RELAXED);
  const int rc = part->ops->submit(part, local, job, msg);
  __atomic_add_fetch(&base->staged_inputs,
                     __atomic_load_n(&part->staged_inputs, __ATOMIC_RELAXED) - staged,
                     __ATOMIC_RELAXED);
  __atomic_add_fetch(&base->device_inputs,
                     __atomic_load_n(&part->device_inputs, __ATOMIC_RELAXED) - on_device,
                     __ATOMIC_RELAXED);
  return rc;
}

static int
multi_finish(pp_backend *base, unsigned slot, const pp_job *job, pp_stage_times *times)
{
  unsigned local;
  pp_backend *part = part_of((multi_backend *) base, slot, &local);
  return part->ops->finish ? part->ops->finish(part, local, job, times) : 0;
}

static int
multi_sync(pp_backend *base)
{
  multi_backend *m = (multi_backend *) base;
  int rc = 0;
  for (unsigned i = 0; i < m->n_parts; i++) {
    const int part_rc = m->parts[i]->ops->sync(m->parts[i]);
    if (part_rc < 0 && rc == 0)
      rc = part_rc;
  }
  return rc;
}

static int
multi_poll(pp_backend *base, unsigned slot, char **msg)
{
  unsigned local;
  pp_backend *part = part_of((multi_backend *) base, slot, &local);
  return part->ops->poll ? part->ops->poll(part, local, msg) : 0;
}

static int
multi_wait(pp_backend *base, unsigned slot, int64_t timeout_ns)
{
  unsigned local;
  pp_backend *part = part_of((multi_backend *) base, slot, &local);
  return part->ops->wait(part, local, timeout_ns);
}

static const char *
multi_describe(pp_backend *base)
{
  return ((multi_backend *) base)->description;
}

static void
multi_destroy(pp_backend *base)
{
  multi_backend *m = (multi_backend *) base;
  for (unsigned i = 0; i < m->n_parts; i++)
    m->parts[i]->ops->destroy(m->parts[i]);
  g_free(m->description);
  g_free(m->plan_line);
  g_free(m->plan_key);
  g_free(m->plan_refused);
  g_free(m);
}

static const pp_backend_ops multi_ops = {
  .abi = PP_BACKEND_ABI,
  .configure = multi_configure,
  .submit = multi_submit,
  .finish = multi_finish,
  .sync = multi_sync,
  .destroy = multi_destroy,
  .poll = multi_poll,
  .describe = multi_describe,
  .plan_info = multi_plan_info,
  .plan_key = multi_plan_key,
};

int
pp_backend_multi_new(pp_backend **parts, const int *labels, unsigned n, pp_backend **out,
                     char **msg)
{
  if (n < 1 || n > PP_MAX_DEVICES) {
    *msg = g_strdup_printf("%u devices: 1 to %d can be used", n, PP_MAX_DEVICES);
    for (unsigned i = 0; i < n && i < PP_MAX_DEVICES; i++)
      parts[i]->ops->destroy(parts[i]);
    return -EINVAL;
  }
  multi_backend *m = g_new0(multi_backend, 1);
  /* Named after what it spreads: the element takes "cuda" to mean that
   * frames go in pinned memory. */
  m->ops = multi_ops;
  m->ops.name = parts[0]->ops->name;
  /* The parts are alike: all report on the consumer's thread or none. */
  if (parts[0]->ops->wait)
    m->ops.wait = multi_wait;
  m->base.ops = &m->ops;
  m->n_parts = n;
  for (unsigned i = 0; i < n; i++) {
    m->parts[i] = parts[i];
    m->labels[i] = labels[i];
    m->links[i] = (part_link){ m, i };
    parts[i]->complete = on_part_complete;
    parts[i]->complete_data = &m->links[i];
  }
  m->description = g_strdup("");
  /* Cached only where every part can say what its plan depends on. */
  GString *key = g_string_new(NULL);
  for (unsigned i = 0; i < n && key; i++) {
    const char *part = parts[i]->ops->plan_key ? parts[i]->ops->plan_key(parts[i]) : NULL;
    if (part) {
      g_string_append_printf(key, "%s%s", i ? PLAN_SEPARATOR : "", part);
    } else {
      g_string_free(key, TRUE);
      key = NULL;
    }
  }
  m->plan_key = key ? g_string_free(key, FALSE) : NULL;
  *out = &m->base;
  return 0;
}
