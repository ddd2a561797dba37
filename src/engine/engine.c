/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The engine (engine.h): slots, tickets, order, drain and flush; the
 * consumer's side, results out in order, is engine_pop.c. */
#include "engine.h"

#include <errno.h>
#include <glib.h>
#include <string.h>

#include "engine_priv.h"
#include "trace.h"
#include "timing.h"

static void
on_complete(void *data, unsigned index, int status, const char *message, bool slot_free)
{
  pp_engine *e = data;
  g_mutex_lock(&e->lock);
  ticket *t = &e->tickets[e->slots[index].ticket];
  t->status = status;
  if (status < 0)
    g_strlcpy(t->message, message ? message : g_strerror(-status), sizeof t->message);
  t->host.completed = pp_now_ns();
  t->state = TICKET_DONE;
  pp_trace_host(e->trace, "completion", t->host.completed, pp_now_ns(), (int64_t) t->seq);
  if (slot_free)
    free_slot_locked(e, index);
  g_cond_broadcast(&e->item_ready);
  g_mutex_unlock(&e->lock);
}

pp_engine *
pp_engine_new(pp_backend *backend, pp_discard_fn discard, void *owner)
{
  pp_engine *e = g_new0(pp_engine, 1);
  g_mutex_init(&e->lock);
  g_cond_init(&e->slot_freed);
  g_cond_init(&e->item_ready);
  g_cond_init(&e->went_idle);
  e->backend = backend;
  e->discard = discard;
  e->owner = owner;
  e->prewake = true;
  backend->complete = on_complete;
  backend->complete_data = e;
  g_queue_init(&e->order);
  for (unsigned i = 0; i < PP_MAX_TICKETS; i++)
    e->tickets[i].entry.link.data = &e->tickets[i].entry;
  return e;
}

void
pp_engine_free(pp_engine *e)
{
  if (!e)
    return;
  pp_engine_set_flushing(e, true);
  pp_engine_flush(e);
  e->backend->ops->destroy(e->backend);
  g_cond_clear(&e->slot_freed);
  g_cond_clear(&e->item_ready);
  g_cond_clear(&e->went_idle);
  g_mutex_clear(&e->lock);
  g_free(e);
}

static bool
tickets_free_locked(pp_engine *e)
{
  for (unsigned i = 0; i < e->n_tickets; i++)
    if (e->tickets[i].state != TICKET_FREE)
      return false;
  return true;
}

static bool
idle_locked(pp_engine *e)
{
  return tickets_free_locked(e) && g_queue_is_empty(&e->order);
}

int
pp_engine_configure(pp_engine *e, const pp_model *model, const pp_frame_layout *layout,
                    unsigned n_slots, const pp_plan_request *request, char **msg)
{
  if (n_slots < 1 || n_slots > PP_MAX_SLOTS) {
    *msg = g_strdup_printf("slots must be 1..%d, not %u", PP_MAX_SLOTS, n_slots);
    return -EINVAL;
  }
  /* Markers may wait in the queue: they take no slot. */
  g_mutex_lock(&e->lock);
  const bool idle = tickets_free_locked(e);
  g_mutex_unlock(&e->lock);
  if (!idle) {
    *msg = g_strdup("cannot reconfigure with frames in flight");
    return -EBUSY;
  }
  e->configured = false;
  const int rc = e->backend->ops->configure(e->backend, model, layout, n_slots, request, msg);
  if (rc < 0)
    return rc;
  g_mutex_lock(&e->lock);
  e->n_slots = n_slots;
  e->n_tickets = n_slots * PP_TICKETS_PER_SLOT;
  memset(e->slots, 0, sizeof e->slots);
  e->next_seq = 0;
  e->configured = true;
  g_mutex_unlock(&e->lock);
  return 0;
}

bool
pp_engine_is_configured(pp_engine *e)
{
  return e->configured;
}

const char *
pp_engine_backend_name(pp_engine *e)
{
  return e->backend->ops->name;
}

const char *
pp_engine_backend_detail(pp_engine *e)
{
  const char *detail = e->backend->ops->describe ? e->backend->ops->describe(e->backend) : NULL;
  return detail ? detail : "";
}

unsigned
pp_engine_streams(pp_engine *e)
{
  return e->backend->ops->streams ? e->backend->ops->streams(e->backend) : 1;
}

double
pp_engine_batch_mean(pp_engine *e)
{
  uint64_t jobs = 0, frames = 0;
  if (e->backend->ops->batching)
    e->backend->ops->batching(e->backend, &jobs, &frames);
  return jobs ? (double) frames / (double) jobs : 1.0;
}

int
pp_engine_acquire(pp_engine *e, unsigned *index)
{
  g_mutex_lock(&e->lock);
  if (!e->configured) {
    g_mutex_unlock(&e->lock);
    return -EINVAL;
  }
  const unsigned t = e->next_seq % e->n_tickets, s = e->next_seq % e->n_slots;
  const int64_t start = e->trace ? pp_now_ns() : 0;
  while (!e->flushing && (e->tickets[t].state != TICKET_FREE || e->slots[s].busy))
    g_cond_wait(&e->slot_freed, &e->lock);
  const bool flushing = e->flushing;
  const uint64_t seq = e->next_seq;
  g_mutex_unlock(&e->lock);
  pp_trace_host(e->trace, "wait for slot", start, pp_now_ns(), (int64_t) seq);
  if (flushing)
    return -ECANCELED;
  *index = t;
  return 0;
}

int
pp_engine_submit(pp_engine *e, unsigned index, const pp_job *job, void *user, char **msg)
{
  g_mutex_lock(&e->lock);
  if (e->flushing) {
    g_mutex_unlock(&e->lock);
    return -ECANCELED;
  }
  ticket *t = &e->tickets[index];
  const unsigned s = e->next_seq % (e->n_slots ? e->n_slots : 1);
  if (!e->configured || index != e->next_seq % e->n_tickets || t->state != TICKET_FREE ||
      e->slots[s].busy) {
    g_mutex_unlock(&e->lock);
    *msg = g_strdup_printf("ticket %u was not acquired before submit", index);
    return -EINVAL;
  }
  t->state = TICKET_BUSY;
  t->slot = s;
  t->job = *job;
  t->user = user;
  t->status = 0;
  t->host = (pp_frame_times){ .submit = pp_now_ns() };
  pp_arrivals_note(&e->arrivals, t->host.submit);
  t->seq = e->next_seq;
  /* Atomic: a consumer spins on it without the lock (pop). */
  __atomic_store_n(&t->submitting, true, __ATOMIC_RELEASE);
  /* A consumer watching for this frame awake submits it itself: its calls
   * into the backend run warm, where this thread's, asleep since the last
   * frame, run cold: a launch and an event record from a thread that slept
   * cost several times what they cost warm (dev/cuda-api-cost.cu).
   * Frames behind one left to the consumer are left to it too, so the
   * backend sees them in order. */
  t->deferred = e->deferring > 0 || (e->watching && g_queue_is_empty(&e->order));
  e->deferring += t->deferred;
  e->slots[s] = (slot){ .busy = true, .ticket = index };
  e->next_seq++;
  g_queue_push_tail_link(&e->order, &t->entry.link);
  /* A consumer asleep on an empty queue waits with a deadline (poll). */
  __atomic_add_fetch(&e->announced, 1, __ATOMIC_RELEASE);
  g_cond_signal(&e->item_ready);
  const bool deferred = t->deferred;
  g_mutex_unlock(&e->lock);
  if (deferred)
    return 0;
  /* Outside the lock: the backend may complete (and call on_complete) before
   * submit returns. */
  return engine_submit_to_backend(e, t, true, msg);
}

int
pp_engine_push_marker(pp_engine *e, void *marker)
{
  g_mutex_lock(&e->lock);
  if (e->flushing) {
    g_mutex_unlock(&e->lock);
    return -ECANCELED;
  }
  marker_entry *m = g_new0(marker_entry, 1);
  m->entry.is_marker = true;
  m->entry.link.data = &m->entry;
  m->marker = marker;
  g_queue_push_tail_link(&e->order, &m->entry.link);
  __atomic_add_fetch(&e->announced, 1, __ATOMIC_RELEASE);
  g_cond_broadcast(&e->item_ready);
  g_mutex_unlock(&e->lock);
  return 0;
}

int
pp_engine_drain(pp_engine *e)
{
  g_mutex_lock(&e->lock);
  while (!e->flushing && !idle_locked(e))
    g_cond_wait(&e->went_idle, &e->lock);
  const bool flushing = e->flushing;
  g_mutex_unlock(&e->lock);
  return flushing ? -ECANCELED : 0;
}

void
pp_engine_set_flushing(pp_engine *e, bool flushing)
{
  g_mutex_lock(&e->lock);
  e->flushing = flushing;
  __atomic_add_fetch(&e->announced, 1, __ATOMIC_RELEASE);
  g_cond_broadcast(&e->slot_freed);
  g_cond_broadcast(&e->item_ready);
  g_cond_broadcast(&e->went_idle);
  g_mutex_unlock(&e->lock);
}

void
pp_engine_flush(pp_engine *e)
{
  if (e->configured)
    e->backend->ops->sync(e->backend);

  g_mutex_lock(&e->lock);
  /* A frame left for the consumer to submit never reached the backend. */
  for (unsigned i = 0; i < e->n_tickets; i++) {
    ticket *t = &e->tickets[i];
    if (t->state == TICKET_BUSY && t->deferred) {
      t->deferred = t->submitting = false;
      t->state = TICKET_DONE;
    }
  }
  e->deferring = 0;
  /* sync returns once the work is done; wait for the completions too. */
  for (unsigned i = 0; i < e->n_tickets; i++)
    while (e->tickets[i].state == TICKET_BUSY)
      g_cond_wait(&e->item_ready, &e->lock);
  GList *link;
  while ((link = g_queue_pop_head_link(&e->order))) {
    entry *first = link->data;
    pp_item item = { 0 };
    if (first->is_marker) {
      marker_entry *m = (marker_entry *) first;
      item = (pp_item){ .kind = PP_ITEM_MARKER, .user = m->marker };
      g_free(m);
    } else {
      ticket *t = (ticket *) first;
      item = (pp_item){ .kind = PP_ITEM_FRAME, .ticket = t - e->tickets, .user = t->user };
      t->state = TICKET_FREE;
      t->user = NULL;
    }
    if (e->discard)
      e->discard(e->owner, &item);
  }
  /* A ticket popped but not released belongs to a consumer that has stopped
   * (the caller's precondition) and has dealt with it. */
  for (unsigned i = 0; i < e->n_tickets; i++)
    e->tickets[i].state = TICKET_FREE;
  memset(e->slots, 0, sizeof e->slots);
  e->next_seq = 0;
  g_cond_broadcast(&e->slot_freed);
  g_cond_broadcast(&e->went_idle);
  g_mutex_unlock(&e->lock);
}

void
pp_engine_get_stats(pp_engine *e, pp_stats *stats)
{
  g_mutex_lock(&e->lock);
  pp_stats_summarize(&e->stats, stats);
  stats->consumer_submits = e->consumer_submits;
  g_mutex_unlock(&e->lock);
  stats->staged_inputs = __atomic_load_n(&e->backend->staged_inputs, __ATOMIC_RELAXED);
  stats->device_inputs = __atomic_load_n(&e->backend->device_inputs, __ATOMIC_RELAXED);
}

void
pp_engine_get_slot_stats(pp_engine *e, pp_slot_stats slots[PP_MAX_SLOTS])
{
  g_mutex_lock(&e->lock);
  memcpy(slots, e->slot_stats, sizeof e->slot_stats);
  g_mutex_unlock(&e->lock);
}

void
pp_engine_set_prewake(pp_engine *e, bool prewake)
{
  g_mutex_lock(&e->lock);
  e->prewake = prewake;
  g_mutex_unlock(&e->lock);
}

bool
pp_engine_plan_info(pp_engine *e, pp_plan_info *info)
{
  if (!e->configured || !e->backend->ops->plan_info)
    return false;
  e->backend->ops->plan_info(e->backend, info);
  return true;
}

const char *
pp_engine_plan_key(pp_engine *e)
{
  return e->backend->ops->plan_key ? e->backend->ops->plan_key(e->backend) : NULL;
}

void
pp_engine_set_trace(pp_engine *e, pp_trace *trace)
{
  g_mutex_lock(&e->lock);
  e->trace = trace;
  g_mutex_unlock(&e->lock);
}
