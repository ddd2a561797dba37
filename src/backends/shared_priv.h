/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What the lanes (backend_shared.c) and the registry of shared backends
 * (shared_registry.c) both see: a shared backend with its slots and
 * waiters, and a lane. Not for anything else. */
#ifndef PP_SHARED_PRIV_H
#define PP_SHARED_PRIV_H

#include <glib.h>

#include "backend_shared.h"

typedef struct lane lane;

/* One of the shared backend's slots: whose frame it runs, and where that
 * frame is in its life. */
typedef struct {
  lane *owner; /* NULL: free */
  unsigned lane_slot;
  pp_job job;
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
};

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
