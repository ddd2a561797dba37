/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Lanes over shared backends (backend_shared.h). */
#include "backend_shared.h"

#include <errno.h>
#include <glib.h>
#include <string.h>

#include "shared_priv.h"

/* Slot `index` takes the lane's frame. Lock held. */
static void
assign_locked(shared *sh, int index, lane *l, unsigned lane_slot, const pp_job *job)
{
  sh->slots[index] = (shared_slot){ .owner = l, .lane_slot = lane_slot, .job = *job };
  l->held[lane_slot] = index;
  l->finished_early[lane_slot] = false;
  l->in_flight++;
}

/* Slot `index` is free: to the first waiter, if any. Lock held. */
static void
release_locked(shared *sh, int index)
{
  sh->slots[index] = (shared_slot){ 0 };
  waiter *w = g_queue_pop_head(&sh->waiters);
  if (!w)
    return;
  assign_locked(sh, index, w->lane, w->lane_slot, w->job);
  w->index = index;
  g_cond_signal(&w->handed);
}

/* Wakes the first waiter, for a result it may finish to free a slot. */
static void
wake_first_locked(shared *sh)
{
  waiter *w = g_queue_peek_head(&sh->waiters);
  if (w)
    g_cond_signal(&w->handed);
}

static void
on_shared_complete(void *data, unsigned index, int status, const char *message, bool slot_free)
{
  shared *sh = data;
  g_mutex_lock(&sh->lock);
  shared_slot *s = &sh->slots[index];
  lane *l = s->owner;
  const unsigned lane_slot = s->lane_slot;
  /* A failed frame is never finished (the engine skips it): its slot is
   * free now, as is one whose result the backend no longer holds. */
  if (slot_free || status < 0) {
    l->held[lane_slot] = -1;
    release_locked(sh, (int) index);
  } else {
    s->unfinished = true;
    wake_first_locked(sh);
  }
  g_mutex_unlock(&sh->lock);
  l->base.complete(l->base.complete_data, lane_slot, status, message, slot_free);
  g_mutex_lock(&sh->lock);
  l->in_flight--;
  g_cond_broadcast(&sh->changed);
  g_mutex_unlock(&sh->lock);
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
                         .no_graphs = request && request->no_graphs };
  const int rc = pp_shared_configure(l, &want, model, layout, request, on_shared_complete, msg);
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

/* A free slot of the shared backend's, or -1. Lock held. */
static int
take_slot_locked(shared *sh)
{
  for (unsigned i = 0; i < sh->config.n_slots; i++)
    if (!sh->slots[i].owner)
      return (int) i;
  return -1;
}

/* Runs finish for `s`, whose result its owner has not popped yet, and
 * keeps what it returned for the owner's own finish. Called and returns
 * with the lock held. */
static void
finish_early_locked(shared *sh, shared_slot *s)
{
  s->finishing = true;
  g_mutex_unlock(&sh->lock);
  pp_stage_times times = { .h2d_us = -1, .mlp_us = -1, .d2h_us = -1 };
  int rc = 0;
  g_mutex_lock(&sh->call_lock);
  if (sh->backend->ops->finish)
    rc = sh->backend->ops->finish(sh->backend, (unsigned) (s - sh->slots), &s->job, &times);
  g_mutex_unlock(&sh->call_lock);
  g_mutex_lock(&sh->lock);
  lane *owner = s->owner;
  const unsigned ls = s->lane_slot;
  owner->early_rc[ls] = rc;
  owner->early_times[ls] = times;
  owner->finished_early[ls] = true;
  owner->held[ls] = -1;
  release_locked(sh, (int) (s - sh->slots));
  g_cond_broadcast(&sh->changed);
}

static shared_slot *
unfinished_locked(shared *sh)
{
  for (unsigned i = 0; i < sh->config.n_slots; i++)
    if (sh->slots[i].unfinished && !sh->slots[i].finishing)
      return &sh->slots[i];
  return NULL;
}

static int
lane_submit(pp_backend *base, unsigned slot, const pp_job *job, char **msg)
{
  lane *l = (lane *) base;
  shared *sh = l->shared;
  g_mutex_lock(&sh->lock);
  /* A slot is free only while nobody waits. */
  int index = g_queue_is_empty(&sh->waiters) ? take_slot_locked(sh) : -1;
  if (index >= 0) {
    assign_locked(sh, index, l, slot, job);
  } else {
    waiter w = { .lane = l, .lane_slot = slot, .job = job, .index = -1 };
    g_cond_init(&w.handed);
    g_queue_push_tail(&sh->waiters, &w);
    while (w.index < 0) {
      /* First in line, with every slot taken: a result its owner has not
       * popped yet is finished here, which frees its slot. */
      shared_slot *u = g_queue_peek_head(&sh->waiters) == &w ? unfinished_locked(sh) : NULL;
      if (u)
        finish_early_locked(sh, u);
      else
        g_cond_wait(&w.handed, &sh->lock);
    }
    g_cond_clear(&w.handed);
    index = w.index;
    /* The next in line may have results to finish too. */
    wake_first_locked(sh);
  }
  g_mutex_unlock(&sh->lock);

  pp_backend *b = sh->backend;
  g_mutex_lock(&sh->call_lock);
  /* Submits run one at a time, so what the counters gain is this frame's. */
  const uint64_t staged = b->staged_inputs, on_device = b->device_inputs;
  const int rc = b->ops->submit(b, (unsigned) index, job, msg);
  __atomic_add_fetch(&base->staged_inputs, b->staged_inputs - staged, __ATOMIC_RELAXED);
  __atomic_add_fetch(&base->device_inputs, b->device_inputs - on_device, __ATOMIC_RELAXED);
  g_mutex_unlock(&sh->call_lock);
  if (rc < 0) {
    /* Refused: nothing of it runs, and no completion comes. */
    g_mutex_lock(&sh->lock);
    l->held[slot] = -1;
    l->in_flight--;
    release_locked(sh, index);
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
    if (s->finishing) {
      g_cond_wait(&sh->changed, &sh->lock);
      continue;
    }
    finish_early_locked(sh, s);
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
      if (s->owner != l)
        continue;
      if (s->finishing)
        busy = true;
      else
        release_locked(sh, (int) i);
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

static const char *
lane_plan_key(pp_backend *base)
{
  pp_backend *b = ((lane *) base)->shared->backend;
  return b->ops->plan_key ? b->ops->plan_key(b) : NULL;
}

static unsigned
lane_streams(pp_backend *base)
{
  return pp_shared_lanes((lane *) base);
}

static void
lane_destroy(pp_backend *base)
{
  lane *l = (lane *) base;
  lane_sync(base);
  pp_shared_leave(l);
  g_free(l->description);
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
