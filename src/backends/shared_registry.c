/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The process's shared backends (shared_priv.h): found by the options they
 * were opened with and what they were configured for, counted by their
 * lanes, closed with the last. */
#include <errno.h>
#include <glib.h>
#include <string.h>

#include "frame.h"
#include "shared_priv.h"

static GMutex registry_lock;
static GList *registry; /* shared */

static char *
options_key(const pp_backend_options *o)
{
  GString *s = g_string_new(NULL);
  g_string_append_printf(s, "kind=%d devices=", o->kind);
  if (o->n_devices > 1)
    for (unsigned i = 0; i < o->n_devices; i++)
      g_string_append_printf(s, "%s%d", i ? "," : "", o->devices[i]);
  else
    g_string_append_printf(s, "%d", o->device_id);
  g_string_append_printf(
      s, " all=%d precision=%d timed=%d context=%p fail=%" G_GUINT64_FORMAT " batch=%u",
      o->all_devices, o->precision, o->time_every_frame, o->cuda_context, o->fail_frame,
      o->max_batch > 1 ? o->max_batch : 1);
  return g_string_free(s, FALSE);
}

static shared *
shared_open(const pp_backend_options *opts, const char *key, pp_complete_fn complete, char **msg)
{
  pp_backend_options own = *opts;
  /* One thread reports for every lane: lanes' consumers never call into
   * the backend to wait. */
  own.completion = PP_COMPLETION_EVENT_THREAD;
  shared *sh = g_new0(shared, 1);
  const int rc = pp_backend_open(&own, complete, sh, &sh->backend, &sh->note, msg);
  if (rc < 0) {
    g_free(sh->note);
    g_free(sh);
    return NULL;
  }
  sh->key = g_strdup(key);
  g_mutex_init(&sh->call_lock);
  g_mutex_init(&sh->lock);
  g_cond_init(&sh->changed);
  g_cond_init(&sh->former_wake);
  g_queue_init(&sh->waiters);
  g_queue_init(&sh->pending);
  g_queue_init(&sh->room_waiters);
  registry = g_list_prepend(registry, sh);
  return sh;
}

static void
config_clear(shared_config *c)
{
  g_clear_pointer(&c->model, g_free);
  g_clear_pointer(&c->forced, g_free);
}

/* Registry lock held; the last lane gone. */
static void
shared_close(shared *sh)
{
  registry = g_list_remove(registry, sh);
  pp_shared_former_stop(sh);
  sh->backend->ops->destroy(sh->backend);
  config_clear(&sh->config);
  g_cond_clear(&sh->former_wake);
  g_cond_clear(&sh->changed);
  g_mutex_clear(&sh->lock);
  g_mutex_clear(&sh->call_lock);
  g_free(sh->note);
  g_free(sh->key);
  g_free(sh);
}

static bool
config_equal(const shared_config *a, const shared_config *b)
{
  return g_strcmp0(a->model, b->model) == 0 && pp_frame_layout_equal(&a->layout, &b->layout) &&
         a->n_slots == b->n_slots && g_strcmp0(a->forced, b->forced) == 0 && a->quick == b->quick &&
         a->no_graphs == b->no_graphs && a->batch == b->batch;
}

/* Registry lock held. */
static shared *
find_configured(const char *key, const shared_config *config)
{
  for (GList *it = registry; it; it = it->next) {
    shared *sh = it->data;
    if (g_str_equal(sh->key, key) && sh->configured && config_equal(&sh->config, config))
      return sh;
  }
  return NULL;
}

/* Registry lock held; the lane idle. */
static void
attach(lane *l, shared *sh)
{
  if (l->shared == sh)
    return;
  if (l->shared && --l->shared->lanes == 0)
    shared_close(l->shared);
  l->shared = sh;
  sh->lanes++;
  l->base.ops = &l->ops;
  l->ops.name = sh->backend->ops->name;
}

/* A backend for `want`: one already configured so, else the lane's own if
 * no other lane runs on it, else a new one. Registry lock held; the lane
 * idle. */
static int
configure_locked(lane *l, shared_config *want, const pp_model *model, const pp_frame_layout *layout,
                 const pp_plan_request *request, pp_complete_fn complete, char **msg)
{
  shared *sh = find_configured(l->key, want);
  if (sh) {
    attach(l, sh);
    config_clear(want);
    return 0;
  }
  sh = l->shared;
  if (sh->lanes > 1 && sh->configured) {
    /* The others run on it as it is. */
    if (!(sh = shared_open(&l->options, l->key, complete, msg)))
      return -ENODEV;
    attach(l, sh);
  }
  sh->configured = false;
  pp_shared_former_stop(sh);
  memset(sh->slots, 0, sizeof sh->slots);
  sh->jobs = sh->frames = 0;
  g_mutex_lock(&sh->call_lock);
  const int rc =
      sh->backend->ops->configure(sh->backend, model, layout, want->n_slots, request, msg);
  g_mutex_unlock(&sh->call_lock);
  config_clear(&sh->config);
  sh->config = *want;
  *want = (shared_config){ 0 };
  sh->configured = rc == 0;
  if (sh->configured && sh->config.batch > 1)
    pp_shared_former_start(sh);
  return rc;
}

static void
describe_lane(lane *l)
{
  pp_backend *b = l->shared->backend;
  const char *detail = b->ops->describe ? b->ops->describe(b) : NULL;
  g_free(l->description);
  const unsigned batch = l->shared->config.batch;
  l->description =
      batch > 1
          ? g_strdup_printf("%s%sshared, batches of up to %u frames", detail ? detail : "",
                            detail && *detail ? ", " : "", batch)
          : g_strdup_printf("%s%sshared", detail ? detail : "", detail && *detail ? ", " : "");
}

int
pp_shared_configure(lane *l, shared_config *want, const pp_model *model,
                    const pp_frame_layout *layout, const pp_plan_request *request,
                    pp_complete_fn complete, char **msg)
{
  g_mutex_lock(&registry_lock);
  const int rc = configure_locked(l, want, model, layout, request, complete, msg);
  if (rc == 0)
    describe_lane(l);
  g_mutex_unlock(&registry_lock);
  return rc;
}

int
pp_shared_join(lane *l, pp_complete_fn complete, char **note, char **msg)
{
  l->key = options_key(&l->options);
  g_mutex_lock(&registry_lock);
  shared *sh = NULL;
  for (GList *it = registry; it && !sh; it = it->next)
    if (g_str_equal(((shared *) it->data)->key, l->key))
      sh = it->data;
  if (!sh)
    sh = shared_open(&l->options, l->key, complete, msg);
  if (sh) {
    attach(l, sh);
    if (note && sh->note)
      *note = g_strdup(sh->note);
  }
  g_mutex_unlock(&registry_lock);
  return sh ? 0 : -ENODEV;
}

void
pp_shared_leave(lane *l)
{
  g_mutex_lock(&registry_lock);
  if (--l->shared->lanes == 0)
    shared_close(l->shared);
  l->shared = NULL;
  g_mutex_unlock(&registry_lock);
}

unsigned
pp_shared_lanes(const lane *l)
{
  g_mutex_lock(&registry_lock);
  const unsigned lanes = l->shared->lanes;
  g_mutex_unlock(&registry_lock);
  return lanes;
}

void
pp_backend_shared_census(unsigned *backends, unsigned *lanes)
{
  g_mutex_lock(&registry_lock);
  *backends = g_list_length(registry);
  *lanes = 0;
  for (GList *it = registry; it; it = it->next)
    *lanes += ((shared *) it->data)->lanes;
  g_mutex_unlock(&registry_lock);
}
