/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A shared backend's slots (shared_priv.h): who holds each, handing a freed
 * one to the first waiter, and finishing a slot's results for lanes that
 * have not popped them yet. */
#include <glib.h>
#include <string.h>

#include "shared_priv.h"

int
pp_shared_take_slot_locked(shared *sh)
{
  for (unsigned i = 0; i < sh->config.n_slots; i++)
    if (!sh->slots[i].owner)
      return (int) i;
  return -1;
}

void
pp_shared_assign_locked(shared *sh, int index, lane *l, unsigned lane_slot, const pp_job *job)
{
  shared_slot *s = &sh->slots[index];
  *s = (shared_slot){ .owner = l, .n_members = 1, .job = *job };
  s->members[0] = (shared_member){ l, lane_slot };
  l->held[lane_slot] = index;
  l->finished_early[lane_slot] = false;
  l->in_flight++;
  sh->jobs++;
  sh->frames++;
}

bool
pp_shared_holds(const shared_slot *s, const lane *l, int lane_slot)
{
  for (unsigned i = 0; i < s->n_members; i++)
    if (s->members[i].owner == l &&
        (lane_slot < 0 || s->members[i].lane_slot == (unsigned) lane_slot))
      return true;
  return false;
}

void
pp_shared_release_locked(shared *sh, int index)
{
  sh->slots[index].owner = NULL;
  sh->slots[index].n_members = 0;
  sh->slots[index].unfinished = false;
  sh->slots[index].finishing = false;
  if (sh->former)
    g_cond_signal(&sh->former_wake);
  waiter *w = g_queue_pop_head(&sh->waiters);
  if (!w)
    return;
  pp_shared_assign_locked(sh, index, w->lane, w->lane_slot, w->job);
  w->index = index;
  g_cond_signal(&w->handed);
}

void
pp_shared_wake_first_locked(shared *sh)
{
  waiter *w = g_queue_peek_head(&sh->waiters);
  if (w)
    g_cond_signal(&w->handed);
}

shared_slot *
pp_shared_unfinished_locked(shared *sh)
{
  for (unsigned i = 0; i < sh->config.n_slots; i++)
    if (sh->slots[i].unfinished && !sh->slots[i].finishing)
      return &sh->slots[i];
  return NULL;
}

void
pp_shared_finish_early_locked(shared *sh, shared_slot *s)
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
  /* A batch's frames crossed together: each takes the batch's times. */
  for (unsigned i = 0; i < s->n_members; i++) {
    lane *owner = s->members[i].owner;
    const unsigned ls = s->members[i].lane_slot;
    owner->early_rc[ls] = rc;
    owner->early_times[ls] = times;
    owner->finished_early[ls] = true;
    owner->held[ls] = -1;
  }
  pp_shared_release_locked(sh, (int) (s - sh->slots));
  g_cond_broadcast(&sh->changed);
}

int
pp_shared_call_submit(shared *sh, unsigned index, char **msg)
{
  pp_backend *b = sh->backend;
  const shared_slot *s = &sh->slots[index];
  /* What the counters need, read before the job can complete and the slot
   * change hands. */
  const unsigned n = s->n_members;
  lane *owners[PP_MAX_BATCH];
  bool staged_input[PP_MAX_BATCH], device_input[PP_MAX_BATCH];
  for (unsigned i = 0; i < n; i++) {
    const pp_job *f = s->job.n_batch ? &s->job.batch[i] : &s->job;
    owners[i] = s->members[i].owner;
    staged_input[i] = !f->input_on_device && !f->input_pinned;
    device_input[i] = f->input_on_device;
  }
  g_mutex_lock(&sh->call_lock);
  /* Submits run one at a time, so what the counters gain is this job's;
   * each frame counts for its lane, which is not freed while call_lock is
   * held (lane_destroy). */
  const uint64_t staged = b->staged_inputs, on_device = b->device_inputs;
  const int rc = b->ops->submit(b, index, &s->job, msg);
  for (unsigned i = 0; i < n && rc == 0; i++) {
    if (b->staged_inputs != staged && staged_input[i])
      __atomic_add_fetch(&owners[i]->base.staged_inputs, 1, __ATOMIC_RELAXED);
    if (b->device_inputs != on_device && device_input[i])
      __atomic_add_fetch(&owners[i]->base.device_inputs, 1, __ATOMIC_RELAXED);
  }
  g_mutex_unlock(&sh->call_lock);
  return rc;
}

void
pp_shared_complete_members(shared *sh, unsigned index, const lane *except, int status,
                           const char *message, bool free_now)
{
  g_mutex_lock(&sh->lock);
  shared_slot *s = &sh->slots[index];
  const unsigned n = s->n_members;
  shared_member members[PP_MAX_BATCH];
  memcpy(members, s->members, n * sizeof *members);
  if (free_now) {
    for (unsigned i = 0; i < n; i++)
      members[i].owner->held[members[i].lane_slot] = -1;
    pp_shared_release_locked(sh, (int) index);
  } else {
    s->unfinished = true;
    pp_shared_wake_first_locked(sh);
    if (sh->former)
      g_cond_signal(&sh->former_wake);
  }
  g_mutex_unlock(&sh->lock);
  for (unsigned i = 0; i < n; i++) {
    lane *l = members[i].owner;
    if (l != except)
      l->base.complete(l->base.complete_data, members[i].lane_slot, status, message, free_now);
  }
  g_mutex_lock(&sh->lock);
  for (unsigned i = 0; i < n; i++)
    members[i].owner->in_flight--;
  g_cond_broadcast(&sh->changed);
  g_mutex_unlock(&sh->lock);
}
