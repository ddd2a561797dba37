/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Batches on a shared backend (shared_priv.h): lanes' frames queue in the
 * order submitted, and each slot that comes free takes up to a batch of
 * them, whichever lanes they are of, as one job. A lane never waits in
 * submit: it queues its frame and, where a slot is free, runs what waits
 * (its own frame among them) at once; otherwise the former, one thread a
 * backend, runs the queue as slots come free. So the more streams keep the
 * GPU busy, the larger its batches, and one stream alone still runs frame
 * by frame with no wait. The queue holds at most a batch a slot: a lane
 * that finds it full waits in submit, as it would for a slot unbatched,
 * so saturated streams hold their frames upstream and the latency inside
 * grows with the slots, not with the streams. */
#include <errno.h>
#include <glib.h>

#include "frame.h"
#include "shared_priv.h"

/* A lane in submit, waiting for room in the queue: whoever takes frames
 * out of it puts this one's in, in turn, so no stream waits rounds while
 * others come and go. */
typedef struct {
  GCond admitted;
  GList *link; /* the lane's waiting_link, its frame stored */
  bool in;
} room_waiter;

/* Frames the queue holds at most: a batch a slot. */
static guint
room(const shared *sh)
{
  return sh->config.batch * sh->config.n_slots;
}

unsigned
pp_shared_batch_size(unsigned max_batch, const pp_frame_layout *layout)
{
  unsigned batch = MIN(max_batch, PP_MAX_BATCH);
  batch = MIN(batch, PP_BATCH_ROWS / MAX(layout->n, 1u));
  pp_frame_layout stacked;
  if (batch <= 1 || !pp_frame_layout_stack(layout, batch, &stacked))
    return 1;
  return batch;
}

/* Up to a batch of queued frames into slot `index`, oldest first. Lock
 * held; the queue not empty. */
static void
fill_locked(shared *sh, int index)
{
  shared_slot *s = &sh->slots[index];
  unsigned n = 0;
  while (n < sh->config.batch && !g_queue_is_empty(&sh->pending)) {
    GList *link = g_queue_pop_head_link(&sh->pending);
    lane *l = link->data;
    const unsigned ls = (unsigned) (link - l->waiting_link);
    s->frames[n] = l->waiting_job[ls];
    s->members[n] = (shared_member){ l, ls };
    l->held[ls] = index;
    n++;
  }
  while (sh->pending.length < room(sh) && !g_queue_is_empty(&sh->room_waiters)) {
    room_waiter *w = g_queue_pop_head(&sh->room_waiters);
    g_queue_push_tail_link(&sh->pending, w->link);
    w->in = true;
    g_cond_signal(&w->admitted);
  }
  s->owner = s->members[0].owner;
  s->n_members = n;
  sh->jobs++;
  sh->frames += n;
  s->unfinished = s->finishing = false;
  s->job = (pp_job){ .batch = s->frames, .n_batch = n };
}

int
pp_shared_batch_submit(lane *l, unsigned slot, const pp_job *job, char **msg)
{
  shared *sh = l->shared;
  g_mutex_lock(&sh->lock);
  l->waiting_job[slot] = *job;
  l->waiting_link[slot] = (GList){ .data = l };
  l->held[slot] = -1;
  l->finished_early[slot] = false;
  l->in_flight++;
  if (sh->pending.length >= room(sh) || !g_queue_is_empty(&sh->room_waiters)) {
    /* Full, or others wait before us: in line, until let in. The queue
     * was full, so the former has frames to run and will. */
    room_waiter w = { .link = &l->waiting_link[slot] };
    g_cond_init(&w.admitted);
    g_queue_push_tail(&sh->room_waiters, &w);
    while (!w.in)
      g_cond_wait(&w.admitted, &sh->lock);
    g_cond_clear(&w.admitted);
    g_mutex_unlock(&sh->lock);
    return 0;
  }
  g_queue_push_tail_link(&sh->pending, &l->waiting_link[slot]);
  const int index = pp_shared_take_slot_locked(sh);
  if (index < 0) {
    g_cond_signal(&sh->former_wake);
    g_mutex_unlock(&sh->lock);
    return 0;
  }
  fill_locked(sh, index);
  const bool mine = pp_shared_holds(&sh->slots[index], l, (int) slot);
  g_mutex_unlock(&sh->lock);
  const int rc = pp_shared_call_submit(sh, (unsigned) index, msg);
  if (rc == 0)
    return 0;
  /* Refused: nothing of it runs. The caller hears of its own frame from
   * the return (the engine takes it back), the others by completion. */
  char *text = g_strdup(*msg);
  pp_shared_complete_members(sh, (unsigned) index, mine ? l : NULL, rc, text, true);
  g_free(text);
  if (!mine) {
    g_clear_pointer(msg, g_free);
    return 0;
  }
  return rc;
}

static gpointer
former_main(gpointer data)
{
  shared *sh = data;
  g_mutex_lock(&sh->lock);
  for (;;) {
    if (g_queue_is_empty(&sh->pending)) {
      if (sh->former_quit)
        break;
      g_cond_wait(&sh->former_wake, &sh->lock);
      continue;
    }
    const int index = pp_shared_take_slot_locked(sh);
    if (index < 0) {
      /* Every slot taken: results nobody has popped yet are finished here,
       * which frees their slot. */
      shared_slot *u = pp_shared_unfinished_locked(sh);
      if (u)
        pp_shared_finish_early_locked(sh, u);
      else
        g_cond_wait(&sh->former_wake, &sh->lock);
      continue;
    }
    fill_locked(sh, index);
    g_mutex_unlock(&sh->lock);
    char *msg = NULL;
    const int rc = pp_shared_call_submit(sh, (unsigned) index, &msg);
    if (rc < 0)
      pp_shared_complete_members(sh, (unsigned) index, NULL, rc, msg, true);
    g_free(msg);
    g_mutex_lock(&sh->lock);
  }
  g_mutex_unlock(&sh->lock);
  return NULL;
}

void
pp_shared_former_start(shared *sh)
{
  sh->former_quit = false;
  sh->former = g_thread_new("pp-batches", former_main, sh);
}

void
pp_shared_former_stop(shared *sh)
{
  if (!sh->former)
    return;
  g_mutex_lock(&sh->lock);
  sh->former_quit = true;
  g_cond_signal(&sh->former_wake);
  g_mutex_unlock(&sh->lock);
  g_thread_join(sh->former);
  sh->former = NULL;
}
