/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A steady stream's frames, met by the consumer awake: pp_engine_pop
 * (engine.c) calls here when its queue is empty and again when the frame
 * at its head was left for it to submit (pp_engine_submit). */
#include "engine_priv.h"
#include "timing.h"

/* A paced frame's consumer is woken this long before the frame is due
 * (longer than a sleep's overshoot on a VM's timer), and watches for it
 * awake until this long after: at most the two together of a core per
 * frame, spent only when frames come at a steady pace (arrivals.c). */
#define PREWAKE_LEAD_NS (100 * 1000)
#define PREWAKE_GRACE_NS (100 * 1000)

/* Takes the lock without sleeping on it while its holder is about to let
 * go: the producer announces a frame with the lock held, so a watching
 * consumer that sees it at once finds the lock taken, and g_mutex_lock
 * would put it to sleep on the futex, to be woken on a VM µs later, which
 * shows in a paced frame's latency. For at most LOCK_SPIN_NS, then it
 * sleeps as usual. */
#define LOCK_SPIN_NS (20 * 1000)

static void
lock_awake(pp_engine *e)
{
  const int64_t until = pp_now_ns() + LOCK_SPIN_NS;
  while (!g_mutex_trylock(&e->lock))
    if (pp_now_ns() > until) {
      g_mutex_lock(&e->lock);
      return;
    }
}

/* The consumer, its queue empty, of a backend that reports on the
 * consumer's thread (completion=consumer): when frames come at a steady
 * pace, sleeps until PREWAKE_LEAD_NS before the next is due (woken sooner
 * by anything announced), then watches for it awake until
 * PREWAKE_GRACE_NS after it was due, so the frame finds the consumer
 * running instead of asleep: a thread that slept a millisecond takes tens
 * of µs to wake on a VM, which a paced frame otherwise waits on after its
 * GPU work is done. Returns false, having done nothing, when no frame is
 * due soon. Called and returns with the lock held. */
bool
engine_await_paced_frame(pp_engine *e)
{
  if (!e->prewake)
    return false;
  const int64_t due = pp_arrivals_next_due(&e->arrivals);
  const int64_t now = pp_now_ns();
  if (!due || now > due + PREWAKE_GRACE_NS)
    return false;
  if (now < due - PREWAKE_LEAD_NS) {
    g_cond_wait_until(&e->item_ready, &e->lock, (due - PREWAKE_LEAD_NS) / 1000);
    return true;
  }
  const unsigned seen = __atomic_load_n(&e->announced, __ATOMIC_ACQUIRE);
  e->watching = true;
  g_mutex_unlock(&e->lock);
  if (e->backend->ops->warm)
    e->backend->ops->warm(e->backend);
  while (__atomic_load_n(&e->announced, __ATOMIC_ACQUIRE) == seen &&
         pp_now_ns() <= due + PREWAKE_GRACE_NS)
    ;
  lock_awake(e);
  e->watching = false;
  return true;
}

/* Submits the frames left to the consumer (pp_engine_submit), the first
 * at `from` and those queued behind it, in order. Called and returns with
 * the lock held. */
void
engine_submit_deferred_locked(pp_engine *e, GList *from)
{
  for (GList *l = from; l; l = l->next) {
    entry *en = l->data;
    ticket *t = (ticket *) en;
    if (en->is_marker)
      continue;
    if (!t->deferred)
      break;
    t->deferred = false;
    e->consumer_submits++;
    g_mutex_unlock(&e->lock);
    char *msg = NULL;
    engine_submit_to_backend(e, t, false, &msg);
    g_clear_pointer(&msg, g_free);
    g_mutex_lock(&e->lock);
    /* Only now: a frame queued while this one was being submitted must be
     * left to this thread too, or the backend could see it first. (A flush
     * in between has zeroed the count.) */
    if (e->deferring)
      e->deferring--;
    if (e->flushing)
      break;
  }
}
