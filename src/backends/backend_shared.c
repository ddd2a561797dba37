/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Lanes over shared backends (backend_shared.h). */
#include "backend_shared.h"

#include <errno.h>
#include <glib.h>
#include <string.h>

#include "shared_priv.h"

/* A failed frame is never finished (the engine skips it): its slot is free
 * now, as is one whose result the backend no longer holds. */
static void
on_shared_complete(void *data, unsigned index, int status, const char *message, bool slot_free)
{
  pp_shared_complete_members(data, index, NULL, status, message, slot_free || status < 0);
}

static int
lane_configure(pp_backend *base, const pp_model *model, const pp_frame_layout *layout,
               unsigned n_slots, const pp_plan_request *request, char **msg)
{
  lane *l = (lane *) base;
  shared_config want = { .model = pp_model_fingerprint(model),
                         .layout = *layout,
                         .n_slots = n_slots,
                         .forced = g_strdup(request ? request->forced : NULL),
                         .quick = request && request->quick,
                         .no_graphs = request && request->no_graphs,
                         .batch = pp_shared_batch_size(l->options.max_batch, layout) };
  pp_plan_request batched = request ? *request : (pp_plan_request){ 0 };
  batched.batch = want.batch;
  const int rc = pp_shared_configure(l, &want, model, layout, &batched, on_shared_complete, msg);
  g_free(want.model);
  g_free(want.forced);
  if (rc == 0) {
    l->n_slots = n_slots;
    for (unsigned i = 0; i < PP_MAX_SLOTS; i++) {
      l->held[i] = -1;
      l->finished_early[i] = false;
    }
  }
  return rc;
}

static int
lane_submit(pp_backend *base, unsigned slot, const pp_job *job, char **msg)
{
  lane *l = (lane *) base;
  shared *sh = l->shared;
  if (sh->config.batch > 1)
    return pp_shared_batch_submit(l, slot, job, msg);
  g_mutex_lock(&sh->lock);
  /* A slot is free only while nobody waits. */
  int index = g_queue_is_empty(&sh->waiters) ? pp_shared_take_slot_locked(sh) : -1;
  if (index >= 0) {
    pp_shared_assign_locked(sh, index, l, slot, job);
  } else {
    waiter w = { .lane = l, .lane_slot = slot, .job = job, .index = -1 };
    g_cond_init(&w.handed);
    g_queue_push_tail(&sh->waiters, &w);
    while (w.index < 0) {
      /* First in line, with every slot taken: a result its owner has not
       * popped yet is finished here, which frees its slot. */
      shared_slot *u =
          g_queue_peek_head(&sh->waiters) == &w ? pp_shared_unfinished_locked(sh) : NULL;
      if (u)
        pp_shared_finish_early_locked(sh, u);
      else
        g_cond_wait(&w.handed, &sh->lock);
    }
    g_cond_clear(&w.handed);
    index = w.index;
    /* The next in line may have results to finish too. */
    pp_shared_wake_first_locked(sh);
  }
  g_mutex_unlock(&sh->lock);

  const int rc = pp_shared_call_submit(sh, (unsigned) index, msg);
  if (rc < 0) {
    /* Refused: nothing of it runs, and no completion comes. */
    g_mutex_lock(&sh->lock);
    l->held[slot] = -1;
    l->in_flight--;
    pp_shared_release_locked(sh, index);
    g_cond_broadcast(&sh->changed);
    g_mutex_unlock(&sh->lock);
  }
  return rc;
}

static int
lane_finish(pp_backend *base, unsigned slot, const pp_job *job, pp_stage_times *times)
{
  (void) job;
  lane *l = (lane *) base;
  shared *sh = l->shared;
  g_mutex_lock(&sh->lock);
  for (;;) {
    if (l->finished_early[slot]) {
      l->finished_early[slot] = false;
      *times = l->early_times[slot];
      g_mutex_unlock(&sh->lock);
      return l->early_rc[slot];
    }
    const int index = l->held[slot];
    if (index < 0) {
      g_mutex_unlock(&sh->lock);
      return 0;
    }
    shared_slot *s = &sh->slots[index];
    if (s->finishing || !s->unfinished) {
      /* Finishing, or (a batch) still running: its completion comes. */
      g_cond_wait(&sh->changed, &sh->lock);
      continue;
    }
    pp_shared_finish_early_locked(sh, s);
  }
}

/* Waits until every frame the lane submitted has been reported, then
 * lets go of the results it still held: the engine discards them. */
static int
lane_sync(pp_backend *base)
{
  lane *l = (lane *) base;
  shared *sh = l->shared;
  g_mutex_lock(&sh->lock);
  for (;;) {
    bool busy = l->in_flight > 0;
    for (unsigned i = 0; i < PP_MAX_SLOTS && !busy; i++) {
      shared_slot *s = &sh->slots[i];
      if (!pp_shared_holds(s, l, -1))
        continue;
      if (s->finishing)
        busy = true;
      else if (s->n_members > 1)
        /* Other lanes' results too: finished for them. */
        pp_shared_finish_early_locked(sh, s);
      else
        pp_shared_release_locked(sh, (int) i);
    }
    if (!busy)
      break;
    g_cond_wait(&sh->changed, &sh->lock);
  }
  for (unsigned i = 0; i < PP_MAX_SLOTS; i++) {
    l->held[i] = -1;
    l->finished_early[i] = false;
  }
  g_cond_broadcast(&sh->changed);
  g_mutex_unlock(&sh->lock);
  return 0;
}

static int
lane_poll(pp_backend *base, unsigned slot, char **msg)
{
  lane *l = (lane *) base;
  shared *sh = l->shared;
  g_mutex_lock(&sh->lock);
  const int index = l->held[slot];
  g_mutex_unlock(&sh->lock);
  if (index < 0 || !sh->backend->ops->poll)
    return 0;
  g_mutex_lock(&sh->call_lock);
  const int rc = sh->backend->ops->poll(sh->backend, (unsigned) index, msg);
  g_mutex_unlock(&sh->call_lock);
  return rc;
}

static const char *
lane_describe(pp_backend *base)
{
  return ((lane *) base)->description;
}

static void
lane_plan_info(pp_backend *base, pp_plan_info *info)
{
  pp_backend *b = ((lane *) base)->shared->backend;
  if (b->ops->plan_info)
    b->ops->plan_info(b, info);
}

/* A batch's plan is made for its frames back to back, so the batch's
 * size (from max-batch and the layout, which the cache's key has) is part
 * of the key. */
static const char *
lane_plan_key(pp_backend *base)
{
  lane *l = (lane *) base;
  pp_backend *b = l->shared->backend;
  const char *key = b->ops->plan_key ? b->ops->plan_key(b) : NULL;
  if (!key || l->options.max_batch <= 1)
    return key;
  g_free(l->plan_key);
  l->plan_key = g_strdup_printf("%s max-batch=%u", key, l->options.max_batch);
  return l->plan_key;
}

static unsigned
lane_streams(pp_backend *base)
{
  return pp_shared_lanes((lane *) base);
}

static void
lane_batching(pp_backend *base, uint64_t *jobs, uint64_t *frames)
{
  shared *sh = ((lane *) base)->shared;
  g_mutex_lock(&sh->lock);
  *jobs = sh->jobs;
  *frames = sh->frames;
  g_mutex_unlock(&sh->lock);
}

static void
lane_destroy(pp_backend *base)
{
  lane *l = (lane *) base;
  lane_sync(base);
  /* A batch's submit may still count a frame of this lane's. */
  g_mutex_lock(&l->shared->call_lock);
  g_mutex_unlock(&l->shared->call_lock);
  pp_shared_leave(l);
  g_free(l->description);
  g_free(l->plan_key);
  g_free(l->key);
  g_free(l);
}

static const pp_backend_ops lane_ops = {
  .abi = PP_BACKEND_ABI,
  .configure = lane_configure,
  .submit = lane_submit,
  .finish = lane_finish,
  .sync = lane_sync,
  .destroy = lane_destroy,
  .poll = lane_poll,
  .describe = lane_describe,
  .plan_info = lane_plan_info,
  .plan_key = lane_plan_key,
  .streams = lane_streams,
  .batching = lane_batching,
};

int
pp_backend_open_shared(const pp_backend_options *opts, pp_backend **out, char **note, char **msg)
{
  lane *l = g_new0(lane, 1);
  l->options = *opts;
  pp_backend_resolve_devices(&l->options);
  l->ops = lane_ops;
  l->description = g_strdup("");
  const int rc = pp_shared_join(l, on_shared_complete, note, msg);
  if (rc < 0) {
    g_free(l->description);
    g_free(l->key);
    g_free(l);
    return rc;
  }
  *out = &l->base;
  return 0;
}
