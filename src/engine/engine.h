/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The engine: frames go into N slots round-robin and come out strictly in
 * submission order, interleaved with markers (the element's serialized
 * events) exactly where they were pushed.
 *
 * A slot is the backend's: busy while the device works on a frame, free
 * again as soon as that is done (or, when the result still needs the
 * slot's memory, once it has been popped). Each frame also holds a ticket,
 * from acquire until release, which indexes whatever its owner keeps per
 * frame; there are PP_TICKETS_PER_SLOT tickets per slot, so finished frames
 * can wait to be pushed downstream while the slots take new ones, and a
 * slow consumer still holds the producer back.
 *
 * One producer thread calls acquire/submit/push_marker/drain; one consumer
 * thread calls pop/release; set_flushing may come from any thread; flush,
 * configure and free only while neither producer nor consumer is inside. */
#ifndef PP_ENGINE_H
#define PP_ENGINE_H

#include <stdbool.h>
#include <stdint.h>

#include "backend.h"
#include "stats.h"

typedef struct pp_engine pp_engine;

typedef enum {
  PP_ITEM_FRAME,
  PP_ITEM_MARKER,
} pp_item_kind;

typedef struct {
  pp_item_kind kind;
  unsigned ticket;    /* PP_ITEM_FRAME: what acquire returned for it */
  void *user;         /* the frame's `user`, or the marker */
  int status;         /* 0, or the backend's negative errno for this frame */
  char message[256];  /* why, when status < 0 */
  int64_t latency_ns; /* submit to pop */
  pp_stage_times times;
  uint64_t seq; /* PP_ITEM_FRAME: the frame's number, from 0 in submission order */
} pp_item;

/* Called for every frame and marker a flush throws away, so their owner can
 * free them. */
typedef void (*pp_discard_fn)(void *owner, const pp_item *item);

/* Takes ownership of `backend`. */
pp_engine *pp_engine_new(pp_backend *backend, pp_discard_fn discard, void *owner);
void pp_engine_free(pp_engine *e);

/* Sizes the slots for frames of `layout`, uploads the model and makes the
 * backend's plan (`request`: backend.h; NULL to tune); idle only. */
int pp_engine_configure(pp_engine *e, const pp_model *model, const pp_frame_layout *layout,
                        unsigned n_slots, const pp_plan_request *request, char **msg);
/* The backend's plan and start-up times since configure; false where the
 * backend has none. */
bool pp_engine_plan_info(pp_engine *e, pp_plan_info *info);
/* What the backend's right plan depends on beyond model, layout and slots
 * (backend.h's plan_key); NULL: its plans are not cached. */
const char *pp_engine_plan_key(pp_engine *e);
/* Whether the consumer, its queue empty and frames coming at a steady
 * pace, wakes shortly before the next is due and watches for it awake
 * (engine_paced.c). On by default; off for hosts where no core may spin. */
void pp_engine_set_prewake(pp_engine *e, bool prewake);
bool pp_engine_is_configured(pp_engine *e);
const char *pp_engine_backend_name(pp_engine *e);
/* The backend's own account of how it runs frames ("" if it gives none). */
const char *pp_engine_backend_detail(pp_engine *e);
/* Streams running on the engine's backend now: 1, or more where it is
 * shared (backend_shared.h). */
unsigned pp_engine_streams(pp_engine *e);
/* Frames a job of the backend's held on average since configure (a
 * shared backend's batches, of every stream on it); 1 where jobs are
 * frames. */
double pp_engine_batch_mean(pp_engine *e);

/* Producer. acquire waits until the next slot in turn is free and a ticket
 * is available (the only place a producer blocks) and returns the ticket,
 * < PP_MAX_TICKETS; submit hands the frame to the slot. Both return
 * -ECANCELED while flushing. A frame of a steady stream may be left to the
 * consumer to hand to the backend (it is awake for it; engine.c): submit
 * then returns 0 and a backend's refusal comes out of pop as a failed
 * frame, as an error on the GPU does. */
int pp_engine_acquire(pp_engine *e, unsigned *ticket);
int pp_engine_submit(pp_engine *e, unsigned ticket, const pp_job *job, void *user, char **msg);
int pp_engine_push_marker(pp_engine *e, void *marker);
/* Waits until everything submitted has been popped and released. */
int pp_engine_drain(pp_engine *e);

/* Consumer. pop waits for the oldest item to be ready; a frame's ticket
 * stays taken until release, so its owner can read what it keeps per ticket. */
int pp_engine_pop(pp_engine *e, pp_item *item);
void pp_engine_release(pp_engine *e, unsigned ticket);

/* Wakes every waiter with -ECANCELED while set. */
void pp_engine_set_flushing(pp_engine *e, bool flushing);
/* Waits for the backend to finish what it runs, then discards every frame
 * and marker not yet popped. */
void pp_engine_flush(pp_engine *e);

void pp_engine_get_stats(pp_engine *e, pp_stats *stats);
/* Each slot's share of the frames so far, slots[0 .. n_slots). */
void pp_engine_get_slot_stats(pp_engine *e, pp_slot_stats slots[PP_MAX_SLOTS]);

/* Records the engine's spans into `trace` (NULL: none): waiting for a
 * slot and the submit call on the producer's track, completions on the
 * backend's thread, and each frame's device stages on its slot's track
 * where the backend times them. Set while idle; the caller keeps the trace
 * until the engine is freed or another is set. */
struct pp_trace;
void pp_engine_set_trace(pp_engine *e, struct pp_trace *trace);

#endif
