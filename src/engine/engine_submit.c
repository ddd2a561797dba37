/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Handing one ticket's frame to the backend and recording the outcome: the
 * step the producer (engine.c) and, for a paced frame left to it, the
 * consumer (engine_paced.c) share. */
#include <glib.h>

#include "engine_priv.h"
#include "timing.h"

int
engine_submit_to_backend(pp_engine *e, ticket *t, bool by_producer, char **msg)
{
  const unsigned s = t->slot;
  const int rc = e->backend->ops->submit(e->backend, s, &t->job, msg);
  const int64_t submitted = pp_now_ns();
  pp_trace_host(e->trace, "submit", t->host.submit, submitted, (int64_t) t->seq);
  g_mutex_lock(&e->lock);
  t->host.submitted = submitted;
  __atomic_store_n(&t->submitting, false, __ATOMIC_RELEASE);
  if (t->state == TICKET_DONE) {
    /* A completion that beat us here keeps its time, but not before submit. */
    if (t->host.completed < submitted)
      t->host.completed = submitted;
    g_cond_broadcast(&e->item_ready);
  } else if (e->backend->ops->wait) {
    /* A consumer that waits on the backend itself may now. */
    g_cond_broadcast(&e->item_ready);
  }
  if (rc < 0 && by_producer) {
    /* Never accepted: take it back out, as if it had not been submitted. The
     * backend has made sure nothing of it is still running. */
    g_queue_unlink(&e->order, &t->entry.link);
    t->state = TICKET_FREE;
    t->user = NULL;
    e->slots[s].busy = false;
    e->next_seq--;
    g_cond_broadcast(&e->slot_freed);
    g_cond_broadcast(&e->went_idle);
  } else if (rc < 0) {
    t->state = TICKET_DONE;
    t->status = rc;
    g_strlcpy(t->message, *msg ? *msg : g_strerror(-rc), sizeof t->message);
    g_clear_pointer(msg, g_free);
    t->host.completed = submitted;
    e->slots[s].busy = false;
    g_cond_broadcast(&e->slot_freed);
  }
  g_mutex_unlock(&e->lock);
  return rc;
}
