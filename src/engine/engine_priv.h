/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The engine's state, shared by engine.c (slots, tickets, order, flush),
 * engine_paced.c (the consumer woken before a paced frame) and
 * engine_submit.c (a frame to the backend). Not for anything outside the
 * engine. */
#ifndef PP_ENGINE_PRIV_H
#define PP_ENGINE_PRIV_H

#include <glib.h>

#include "arrivals.h"
#include "engine.h"
#include "trace.h"

typedef enum {
  TICKET_FREE,   /* may take the next frame */
  TICKET_BUSY,   /* submitted, backend working */
  TICKET_DONE,   /* backend finished; waiting to be popped */
  TICKET_POPPED, /* popped; its owner still reads per-ticket data until release */
} ticket_state;

/* Queue entries are tickets or markers; both start with this tag. */
typedef struct {
  bool is_marker;
  GList link; /* link.data points back at the entry */
} entry;

typedef struct {
  entry entry;
  ticket_state state;
  unsigned slot;
  pp_job job;
  void *user;
  int status;
  char message[256];
  pp_frame_times host;
  uint64_t seq;
  /* The producer is still inside the backend's submit: the frame is not
   * ready to pop, even if the backend already reported it done. */
  bool submitting;
  /* Queued for the consumer to submit itself (pp_engine_submit), which it
   * has not yet: submitting stays true until it has. */
  bool deferred;
} ticket;

typedef struct {
  entry entry;
  void *marker;
} marker_entry;

typedef struct {
  bool busy;       /* the backend works on a frame, or holds its result for finish */
  unsigned ticket; /* that frame's */
} slot;

struct pp_engine {
  GMutex lock;
  /* Three conditions, so a completion wakes those who wait for it and a
   * release those who wait for that. */
  GCond slot_freed; /* producer in acquire */
  GCond item_ready; /* consumer in pop; flush waiting for the backend */
  GCond went_idle;  /* drain */
  pp_backend *backend;
  pp_discard_fn discard;
  void *owner;
  unsigned n_slots, n_tickets;
  bool configured;
  slot slots[PP_MAX_SLOTS];
  ticket tickets[PP_MAX_TICKETS];
  GQueue order; /* tickets and markers in submission order */
  uint64_t next_seq;
  bool flushing;
  /* The consumer's early wake-up for paced frames (engine_paced.c):
   * when the next is due, and a count bumped (atomically, under the lock)
   * each time a frame, marker or flush is announced on item_ready, which
   * a consumer watching without the lock reads. */
  pp_arrivals arrivals;
  unsigned announced;
  bool prewake;       /* pp_engine_set_prewake */
  bool watching;      /* the consumer watches for a frame awake, lock released */
  unsigned deferring; /* frames queued for the consumer to submit, not yet submitted */
  uint64_t consumer_submits;
  pp_stats_recorder stats;
  pp_slot_stats slot_stats[PP_MAX_SLOTS];
  pp_trace *trace;
};

/* Slot `index` free again for the producer. Lock held. */
static inline void
free_slot_locked(pp_engine *e, unsigned index)
{
  e->slots[index].busy = false;
  g_cond_signal(&e->slot_freed);
}

/* Hands ticket t's frame to the backend and records the outcome: called
 * without the lock, by the producer or, for a deferred frame, by the
 * consumer. A frame the backend refuses is taken back out as if never
 * submitted when the producer submits it (it gets the error); when the
 * consumer does, it stays queued as a failed frame, as the producer has
 * long returned. */
int engine_submit_to_backend(pp_engine *e, ticket *t, bool by_producer,
                             char **msg); /* engine_submit.c */

/* ---- engine_paced.c ---- */

/* The consumer with an empty queue, completion=consumer: waits for a paced
 * frame awake when one is due shortly; false, having done nothing, when
 * none is. Lock held on entry and return. */
bool engine_await_paced_frame(pp_engine *e);
/* Submits the frames left to the consumer, from `from` on, in order. Lock
 * held on entry and return. */
void engine_submit_deferred_locked(pp_engine *e, GList *from);

#endif
