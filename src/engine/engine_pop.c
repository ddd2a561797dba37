/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The engine's consumer side: each result out in submission order
 * (pp_engine_pop), waiting on the backend or the completion thread, and
 * its ticket handed back (pp_engine_release). */
#include <errno.h>
#include <glib.h>

#include "engine_priv.h"
#include "timing.h"

/* The head of the queue is a frame that has not completed in a second: ask
 * the backend whether its work failed (a faulted GPU stream runs no more
 * callbacks). Called and returns with the lock held. */
static void
poll_overdue_locked(pp_engine *e, ticket *late)
{
  const unsigned slot_index = late->slot;
  char *reason = NULL;
  g_mutex_unlock(&e->lock);
  const int rc = e->backend->ops->poll(e->backend, slot_index, &reason);
  g_mutex_lock(&e->lock);
  if (rc < 0 && late->state == TICKET_BUSY) {
    late->status = rc;
    g_strlcpy(late->message, reason ? reason : g_strerror(-rc), sizeof late->message);
    late->state = TICKET_DONE;
  }
  g_free(reason);
}

static void
trace_device_stages(pp_engine *e, unsigned slot, const pp_stage_times *times, int64_t seq)
{
  if (!e->trace)
    return;
  if (times->h2d_start_ns && times->h2d_us >= 0)
    pp_trace_device(e->trace, slot, "H2D", times->h2d_start_ns,
                    times->h2d_start_ns + (int64_t) (times->h2d_us * 1000), seq);
  if (times->mlp_start_ns && times->mlp_us >= 0)
    pp_trace_device(e->trace, slot, "MLP", times->mlp_start_ns,
                    times->mlp_start_ns + (int64_t) (times->mlp_us * 1000), seq);
  if (times->d2h_start_ns && times->d2h_us >= 0)
    pp_trace_device(e->trace, slot, "D2H", times->d2h_start_ns,
                    times->d2h_start_ns + (int64_t) (times->d2h_us * 1000), seq);
}

/* At most this long, then the consumer sleeps on the condition as usual. */
#define SUBMIT_SPIN_NS (200 * 1000)

/* Called and returns with the lock held; the producer needs it to finish. */
static void
spin_while_submitting(pp_engine *e, ticket *t)
{
  g_mutex_unlock(&e->lock);
  const int64_t until = pp_now_ns() + SUBMIT_SPIN_NS;
  while (__atomic_load_n(&t->submitting, __ATOMIC_ACQUIRE) && pp_now_ns() < until)
    ;
  g_mutex_lock(&e->lock);
}

int
pp_engine_pop(pp_engine *e, pp_item *item)
{
  bool spun = false;
  g_mutex_lock(&e->lock);
  for (;;) {
    if (e->flushing) {
      g_mutex_unlock(&e->lock);
      return -ECANCELED;
    }
    GList *head = g_queue_peek_head_link(&e->order);
    entry *first = head ? head->data : NULL;
    if (first && first->is_marker) {
      g_queue_pop_head_link(&e->order);
      marker_entry *m = (marker_entry *) first;
      *item = (pp_item){ .kind = PP_ITEM_MARKER, .user = m->marker };
      g_free(m);
      g_cond_broadcast(&e->went_idle);
      g_mutex_unlock(&e->lock);
      return 0;
    }
    ticket *t = (ticket *) first;
    if (t && t->state == TICKET_DONE && !t->submitting)
      break;
    if (t && t->deferred) {
      engine_submit_deferred_locked(e, head);
      continue;
    }
    if (t && t->state == TICKET_BUSY && t->submitting && e->backend->ops->wait && !spun) {
      /* Woken as the frame was queued, the consumer waits out its submit
       * call (tens of µs) awake: sleeping again would cost another wake-up
       * once submit returns, on every frame that finds the GPU idle. Once
       * per pop: a submit that takes longer is slept on as before. */
      spin_while_submitting(e, t);
      spun = true;
      continue;
    }
    if (t && t->state == TICKET_BUSY && !t->submitting && e->backend->ops->wait) {
      /* The backend reports on this thread: no wake-up between threads. A
       * bounded wait, so flushing is seen. */
      const unsigned slot_index = t->slot;
      g_mutex_unlock(&e->lock);
      const int rc = e->backend->ops->wait(e->backend, slot_index, 10 * 1000 * 1000);
      g_mutex_lock(&e->lock);
      if (rc == -EAGAIN && t->state == TICKET_BUSY && !e->flushing && e->backend->ops->poll)
        poll_overdue_locked(e, t);
      continue;
    }
    if (!t && e->backend->ops->wait && engine_await_paced_frame(e))
      continue;
    if (!t || !e->backend->ops->poll) {
      g_cond_wait(&e->item_ready, &e->lock);
      continue;
    }
    const gint64 deadline = g_get_monotonic_time() + G_TIME_SPAN_SECOND;
    if (!g_cond_wait_until(&e->item_ready, &e->lock, deadline))
      poll_overdue_locked(e, t);
  }
  ticket *t = (ticket *) g_queue_pop_head_link(&e->order)->data;
  t->state = TICKET_POPPED;
  const unsigned index = t - e->tickets;
  /* The slot still holds this frame's result: finish reads it out. */
  const bool held = e->slots[t->slot].busy && e->slots[t->slot].ticket == index;
  *item = (pp_item){
    .kind = PP_ITEM_FRAME, .ticket = index, .user = t->user, .status = t->status, .seq = t->seq
  };
  if (t->status < 0)
    g_strlcpy(item->message, t->message, sizeof item->message);
  g_mutex_unlock(&e->lock);

  item->times = (pp_stage_times){ .h2d_us = -1, .mlp_us = -1, .d2h_us = -1 };
  if (held && item->status == 0 && e->backend->ops->finish) {
    const int rc = e->backend->ops->finish(e->backend, t->slot, &t->job, &item->times);
    if (rc < 0) {
      item->status = rc;
      g_strlcpy(item->message, g_strerror(-rc), sizeof item->message);
    }
  }
  trace_device_stages(e, t->slot, &item->times, (int64_t) t->seq);
  g_mutex_lock(&e->lock);
  if (held)
    free_slot_locked(e, t->slot);
  t->host.popped = pp_now_ns();
  item->latency_ns = t->host.popped - t->host.submit;
  pp_stats_record(&e->stats, &t->host, &item->times);
  pp_slot_stats *share = &e->slot_stats[t->slot];
  share->frames++;
  share->latency_sum_us += item->latency_ns / 1000.0;
  if (item->times.mlp_us >= 0) {
    share->timed_frames++;
    share->mlp_sum_us += item->times.mlp_us;
  }
  g_mutex_unlock(&e->lock);
  return 0;
}

void
pp_engine_release(pp_engine *e, unsigned index)
{
  g_mutex_lock(&e->lock);
  e->tickets[index].state = TICKET_FREE;
  e->tickets[index].user = NULL;
  g_cond_signal(&e->slot_freed); /* one producer */
  g_cond_broadcast(&e->went_idle);
  g_mutex_unlock(&e->lock);
}
