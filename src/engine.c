#include "engine.h"

#include <errno.h>
#include <glib.h>
#include <string.h>

typedef enum {
  SLOT_FREE,   /* may take the next frame */
  SLOT_BUSY,   /* submitted, backend working */
  SLOT_DONE,   /* backend finished; waiting to be popped */
  SLOT_POPPED, /* popped; its owner still reads per-slot data until release */
} slot_state;

/* Queue entries are slots or markers; both start with this tag. */
typedef struct {
  bool is_marker;
  GList link; /* link.data points back at the entry */
} entry;

typedef struct {
  entry entry;
  slot_state state;
  pp_job job;
  void *user;
  int status;
  char message[256];
  int64_t submit_ns;
} slot;

typedef struct {
  entry entry;
  void *marker;
} marker_entry;

struct pp_engine {
  GMutex lock;
  GCond changed; /* broadcast on every state change; few waiters, all cheap */
  pp_backend *backend;
  pp_discard_fn discard;
  void *owner;
  unsigned n_slots;
  bool configured;
  slot slots[PP_MAX_SLOTS];
  GQueue order; /* slots and markers in submission order */
  uint64_t next_seq;
  bool flushing;
  pp_stats_recorder stats;
};

static void
on_complete(void *data, unsigned index, int status, const char *message)
{
  pp_engine *e = data;
  g_mutex_lock(&e->lock);
  slot *s = &e->slots[index];
  s->status = status;
  if (status < 0)
    g_strlcpy(s->message, message ? message : g_strerror(-status), sizeof s->message);
  s->state = SLOT_DONE;
  g_cond_broadcast(&e->changed);
  g_mutex_unlock(&e->lock);
}

pp_engine *
pp_engine_new(pp_backend *backend, pp_discard_fn discard, void *owner)
{
  pp_engine *e = g_new0(pp_engine, 1);
  g_mutex_init(&e->lock);
  g_cond_init(&e->changed);
  e->backend = backend;
  e->discard = discard;
  e->owner = owner;
  backend->complete = on_complete;
  backend->complete_data = e;
  g_queue_init(&e->order);
  for (unsigned i = 0; i < PP_MAX_SLOTS; i++)
    e->slots[i].entry.link.data = &e->slots[i].entry;
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
  g_cond_clear(&e->changed);
  g_mutex_clear(&e->lock);
  g_free(e);
}

static bool
slots_free_locked(pp_engine *e)
{
  for (unsigned i = 0; i < e->n_slots; i++)
    if (e->slots[i].state != SLOT_FREE)
      return false;
  return true;
}

static bool
idle_locked(pp_engine *e)
{
  return slots_free_locked(e) && g_queue_is_empty(&e->order);
}

int
pp_engine_configure(pp_engine *e, const pp_model *model, const pp_frame_layout *layout,
                    unsigned n_slots, char **msg)
{
  if (n_slots < 1 || n_slots > PP_MAX_SLOTS) {
    *msg = g_strdup_printf("slots must be 1..%d, not %u", PP_MAX_SLOTS, n_slots);
    return -EINVAL;
  }
  /* Markers may wait in the queue: they take no slot. */
  g_mutex_lock(&e->lock);
  const bool idle = slots_free_locked(e);
  g_mutex_unlock(&e->lock);
  if (!idle) {
    *msg = g_strdup("cannot reconfigure with frames in flight");
    return -EBUSY;
  }
  e->configured = false;
  const int rc = e->backend->ops->configure(e->backend, model, layout, n_slots, msg);
  if (rc < 0)
    return rc;
  g_mutex_lock(&e->lock);
  e->n_slots = n_slots;
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

int
pp_engine_acquire(pp_engine *e, unsigned *index)
{
  g_mutex_lock(&e->lock);
  if (!e->configured) {
    g_mutex_unlock(&e->lock);
    return -EINVAL;
  }
  const unsigned next = e->next_seq % e->n_slots;
  while (!e->flushing && e->slots[next].state != SLOT_FREE)
    g_cond_wait(&e->changed, &e->lock);
  const bool flushing = e->flushing;
  g_mutex_unlock(&e->lock);
  if (flushing)
    return -ECANCELED;
  *index = next;
  return 0;
}

int
pp_engine_submit(pp_engine *e, unsigned index, const pp_job *job, void *user, char **msg)
{
  g_mutex_lock(&e->lock);
  slot *s = &e->slots[index];
  if (e->flushing) {
    g_mutex_unlock(&e->lock);
    return -ECANCELED;
  }
  if (!e->configured || index != e->next_seq % e->n_slots || s->state != SLOT_FREE) {
    g_mutex_unlock(&e->lock);
    *msg = g_strdup_printf("slot %u was not acquired before submit", index);
    return -EINVAL;
  }
  s->state = SLOT_BUSY;
  s->job = *job;
  s->user = user;
  s->status = 0;
  s->submit_ns = pp_now_ns();
  e->next_seq++;
  g_queue_push_tail_link(&e->order, &s->entry.link);
  g_mutex_unlock(&e->lock);

  /* Outside the lock: the backend may complete (and call on_complete) before
   * submit returns. */
  const int rc = e->backend->ops->submit(e->backend, index, &s->job, msg);
  if (rc < 0) {
    /* Never accepted: take it back out, as if it had not been submitted. The
     * backend has made sure nothing of it is still running. */
    g_mutex_lock(&e->lock);
    g_queue_unlink(&e->order, &s->entry.link);
    s->state = SLOT_FREE;
    s->user = NULL;
    e->next_seq--;
    g_cond_broadcast(&e->changed);
    g_mutex_unlock(&e->lock);
  }
  return rc;
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
  g_cond_broadcast(&e->changed);
  g_mutex_unlock(&e->lock);
  return 0;
}

int
pp_engine_drain(pp_engine *e)
{
  g_mutex_lock(&e->lock);
  while (!e->flushing && !idle_locked(e))
    g_cond_wait(&e->changed, &e->lock);
  const bool flushing = e->flushing;
  g_mutex_unlock(&e->lock);
  return flushing ? -ECANCELED : 0;
}

int
pp_engine_pop(pp_engine *e, pp_item *item)
{
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
      g_cond_broadcast(&e->changed);
      g_mutex_unlock(&e->lock);
      return 0;
    }
    if (first && ((slot *) first)->state == SLOT_DONE)
      break;
    g_cond_wait(&e->changed, &e->lock);
  }
  slot *s = (slot *) g_queue_pop_head_link(&e->order)->data;
  s->state = SLOT_POPPED;
  const unsigned index = s - e->slots;
  *item = (pp_item){ .kind = PP_ITEM_FRAME, .slot = index, .user = s->user, .status = s->status };
  if (s->status < 0)
    g_strlcpy(item->message, s->message, sizeof item->message);
  g_mutex_unlock(&e->lock);

  item->times = (pp_stage_times){ -1, -1, -1 };
  if (item->status == 0 && e->backend->ops->finish) {
    const int rc = e->backend->ops->finish(e->backend, index, &s->job, &item->times);
    if (rc < 0) {
      item->status = rc;
      g_strlcpy(item->message, g_strerror(-rc), sizeof item->message);
    }
  }
  item->latency_ns = pp_now_ns() - s->submit_ns;
  g_mutex_lock(&e->lock);
  pp_stats_record(&e->stats, item->latency_ns, &item->times);
  g_mutex_unlock(&e->lock);
  return 0;
}

void
pp_engine_release(pp_engine *e, unsigned index)
{
  g_mutex_lock(&e->lock);
  e->slots[index].state = SLOT_FREE;
  e->slots[index].user = NULL;
  g_cond_broadcast(&e->changed);
  g_mutex_unlock(&e->lock);
}

void
pp_engine_set_flushing(pp_engine *e, bool flushing)
{
  g_mutex_lock(&e->lock);
  e->flushing = flushing;
  g_cond_broadcast(&e->changed);
  g_mutex_unlock(&e->lock);
}

void
pp_engine_flush(pp_engine *e)
{
  if (e->configured)
    e->backend->ops->sync(e->backend);

  g_mutex_lock(&e->lock);
  /* sync returns once the work is done; wait for the completions too. */
  for (unsigned i = 0; i < e->n_slots; i++)
    while (e->slots[i].state == SLOT_BUSY)
      g_cond_wait(&e->changed, &e->lock);
  GList *link;
  while ((link = g_queue_pop_head_link(&e->order))) {
    entry *first = link->data;
    pp_item item = { 0 };
    if (first->is_marker) {
      marker_entry *m = (marker_entry *) first;
      item = (pp_item){ .kind = PP_ITEM_MARKER, .user = m->marker };
      g_free(m);
    } else {
      slot *s = (slot *) first;
      item = (pp_item){ .kind = PP_ITEM_FRAME, .slot = s - e->slots, .user = s->user };
      s->state = SLOT_FREE;
      s->user = NULL;
    }
    if (e->discard)
      e->discard(e->owner, &item);
  }
  /* A slot popped but not released belongs to a consumer that has stopped
   * (the caller's precondition) and has dealt with it. */
  for (unsigned i = 0; i < e->n_slots; i++)
    e->slots[i].state = SLOT_FREE;
  e->next_seq = 0;
  g_cond_broadcast(&e->changed);
  g_mutex_unlock(&e->lock);
}

void
pp_engine_get_stats(pp_engine *e, pp_stats *stats)
{
  g_mutex_lock(&e->lock);
  pp_stats_summarize(&e->stats, stats);
  g_mutex_unlock(&e->lock);
  stats->staged_inputs = __atomic_load_n(&e->backend->staged_inputs, __ATOMIC_RELAXED);
}

void
pp_engine_reset_stats(pp_engine *e)
{
  g_mutex_lock(&e->lock);
  memset(&e->stats, 0, sizeof e->stats);
  g_mutex_unlock(&e->lock);
  __atomic_store_n(&e->backend->staged_inputs, 0, __ATOMIC_RELAXED);
}
