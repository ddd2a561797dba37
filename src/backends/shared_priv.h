/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What the lanes (backend_shared.c), the registry of shared backends
 * (shared_registry.c), the slots' bookkeeping (shared_slots.c) and the
 * batch former (shared_batches.c) see: a shared backend with its slots,
 * waiters and frames waiting for a batch, and a lane. Not for anything
 * else. */
#ifndef PP_SHARED_PRIV_H
#define PP_SHARED_PRIV_H

#include <glib.h>

#include "backend_shared.h"

typedef struct lane lane;

/* A lane's frame in a slot: whose, and which of the lane's slots. */
typedef struct {
  lane *owner;
  unsigned lane_slot;
} shared_member;

/* One of the shared backend's slots: whose frames it runs, and where they
 * are in their life. One frame, or (batches) up to config.batch of several
 * lanes', run as one job. */
typedef struct {
  lane *owner; /* the first member's lane; NULL: free */
  unsigned n_members;
  shared_member members[PP_MAX_BATCH];
  pp_job job;
  pp_job frames[PP_MAX_BATCH]; /* a batch's: job.batch points here */
  /* Completed with its result still held: finish has to run before the
   * slot takes another frame. */
  bool unfinished;
  bool finishing; /* someone runs finish on it now */
} shared_slot;

/* What a backend was configured for: lanes with the same join it. */
typedef struct {
  char *model; /* pp_model_fingerprint */
  pp_frame_layout layout;
  unsigned n_slots;
  char *forced;
  bool quick, no_graphs;
  unsigned batch; /* frames a job may hold: 1 unless the layout stacks */
} shared_config;

typedef struct {
  char *key; /* the options it was opened with, as text */
  pp_backend *backend;
  char *note;
  unsigned lanes;
  bool configured;
  shared_config config;
  /* Calls into the backend, one at a time: lanes submit from their own
   * threads. Taken before `lock`, never while holding it. */
  GMutex call_lock;
  GMutex lock; /* slots, waiters, lanes' in-flight counts */
  /* A frame finished (sync waits for a lane's) or finishing ended. */
  GCond changed;
  shared_slot slots[PP_MAX_SLOTS];
  /* Lanes waiting in submit for a slot, first come first served: a freed
   * slot goes to the first (woken alone, not every waiter), so no stream
   * waits rounds while others take turns. */
  GQueue waiters;
  /* Batches (config.batch > 1): lanes' frames waiting for a slot, linked
   * through the lanes' own `waiting_link`s (no allocation a frame), and
   * the one thread that forms them into batches as slots come free. */
  GQueue pending;
  /* Lanes waiting for room in the queue, first come first served: frames
   * leaving the queue let the first ones' in (room_waiter). */
  GQueue room_waiters;
  GThread *former;
  GCond former_wake;
  bool former_quit;
  uint64_t jobs, frames; /* run since configure (pp_backend_ops.batching) */
} shared;

/* A lane in submit, waiting for a slot: whoever frees one hands it over
 * with the frame already entered. */
typedef struct {
  GCond handed;
  struct lane *lane;
  unsigned lane_slot;
  const pp_job *job;
  int index; /* the slot handed over; -1 until then */
} waiter;

struct lane {
  pp_backend base;
  pp_backend_ops ops;
  pp_backend_options options;
  char *key;
  shared *shared;
  unsigned n_slots;
  int held[PP_MAX_SLOTS]; /* lane slot -> shared slot; -1: none */
  /* A result finished early by a lane that needed its shared slot: what
   * finish then returns for the lane slot. */
  bool finished_early[PP_MAX_SLOTS];
  int early_rc[PP_MAX_SLOTS];
  pp_stage_times early_times[PP_MAX_SLOTS];
  unsigned in_flight; /* submitted, not yet reported; under shared->lock */
  char *description;
  char *plan_key; /* the backend's, with the batch's size */
  /* Batches: each lane slot's frame while it waits in shared->pending. */
  pp_job waiting_job[PP_MAX_SLOTS];
  GList waiting_link[PP_MAX_SLOTS];
};

/* ---- the slots' bookkeeping (shared_slots.c); lock held ---------------- */

/* A free slot, or -1. */
int pp_shared_take_slot_locked(shared *sh);
/* Slot `index` takes one frame of the lane's. */
void pp_shared_assign_locked(shared *sh, int index, lane *l, unsigned lane_slot, const pp_job *job);
/* Whether the slot's job holds a frame of the lane's: the one of
 * `lane_slot`, or (-1) any. */
bool pp_shared_holds(const shared_slot *s, const lane *l, int lane_slot);
/* Slot `index` is free: to the first waiter, if any (the batch former
 * hears of it too). */
void pp_shared_release_locked(shared *sh, int index);
/* Wakes the first waiter, for a result it may finish to free a slot. */
void pp_shared_wake_first_locked(shared *sh);
/* A slot whose results wait to be finished (and nobody finishes now), or
 * NULL. */
shared_slot *pp_shared_unfinished_locked(shared *sh);
/* Runs finish for `s` (every member's result, not popped yet), keeps what
 * it returned for each member's own finish and frees the slot. Drops the
 * lock while it calls the backend. */
void pp_shared_finish_early_locked(shared *sh, shared_slot *s);
/* Slot `index`'s job ended: each member's lane but `except` (NULL: none)
 * is told, after the slot is freed where `free_now`, else kept for finish.
 * Lock not held. */
void pp_shared_complete_members(shared *sh, unsigned index, const lane *except, int status,
                                const char *message, bool free_now);
/* Calls the backend's submit for slot `index`'s job (under call_lock),
 * counting staged and device inputs for the lanes whose frames they were. */
int pp_shared_call_submit(shared *sh, unsigned index, char **msg);

/* ---- batches (shared_batches.c) ---------------------------------------- */

/* Frames a job of this backend's may hold for frames of `layout`: up to
 * `max_batch` where the layout stacks, and PP_BATCH_ROWS samples. */
unsigned pp_shared_batch_size(unsigned max_batch, const pp_frame_layout *layout);
/* The lane's frame into the queue; run at once, with what waits before
 * it, when a slot is free, else by the former as one comes free. Errors
 * of a batch that holds other lanes' frames reach them as completions. */
int pp_shared_batch_submit(lane *l, unsigned slot, const pp_job *job, char **msg);
/* The former, for a backend configured with batches; stopped (after the
 * queue is empty) before it is configured again or closed. */
void pp_shared_former_start(shared *sh);
void pp_shared_former_stop(shared *sh);

/* The process's shared backends, all under one lock. Each function takes
 * it; the lane is idle (no frame of its in flight). */

/* Joins the lane to a backend opened with its options (any configuration),
 * opening one where there is none (the options as text into l->key); `complete` (with the shared backend as
 * its data) takes every completion of a backend opened here. */
int pp_shared_join(lane *l, pp_complete_fn complete, char **note, char **msg);
/* Moves the lane to a backend configured for `want` (taking its strings):
 * one already configured so, else the lane's own if no other lane runs on
 * it, else a new one; then the lane's description. */
int pp_shared_configure(lane *l, shared_config *want, const pp_model *model,
                        const pp_frame_layout *layout, const pp_plan_request *request,
                        pp_complete_fn complete, char **msg);
/* The lane leaves its backend, which closes with its last lane. */
void pp_shared_leave(lane *l);
/* Lanes on the lane's backend now. */
unsigned pp_shared_lanes(const lane *l);

#endif
