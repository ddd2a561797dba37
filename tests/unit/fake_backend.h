// SPDX-License-Identifier: LGPL-2.1-or-later
/* A backend for the engine's tests: it "computes" output[0] = input[0] * 2
 * + 1 and completes its slots in random order after random delays, and can
 * hold completions back, refuse submits, fail frames or keep results in the
 * slot until finish. With `consumer`, it completes nothing by itself: the
 * engine's consumer reports each frame through pp_backend_ops.wait, which
 * first says "not yet" at random. */
#ifndef PP_FAKE_BACKEND_H
#define PP_FAKE_BACKEND_H

#include <glib.h>

#include "backend.h"
#include "engine.h"
#include "testutil.h"

typedef struct {
  pp_backend base;
  GMutex lock;
  GCond changed;
  GThread *thread;
  bool quit;
  bool hold;           /* keep completions back until released */
  int fail_submits;    /* fail this many submits with -EIO */
  int fail_completion; /* complete the next frame with -EIO */
  bool hold_slots;     /* results wait in the slot until finish, like a staged copy */
  bool consumer;       /* completion=consumer: frames complete in wait */
  int waits, not_yet;  /* wait calls, and those that answered -EAGAIN */
  int finished;        /* finish calls */
  GArray *pending;     /* slots submitted, not yet completed */
  pp_job jobs[PP_MAX_SLOTS];
  test_rng rng;
  /* Every job submitted, in order: its input's first float and the slot. */
  GArray *inputs, *slots;
} fake_backend;

fake_backend *fake_new(bool hold, uint64_t seed);
/* The same, reporting on the consumer's thread (before the engine exists). */
void fake_report_on_consumer(fake_backend *f);
void fake_set_hold(fake_backend *f, bool hold);

/* Per-ticket frames for a fake behind an engine: frame seq's input is seq
 * and its result seq * 2 + 1, so a mix-up shows. */
typedef struct {
  float inputs[PP_MAX_TICKETS], outputs[PP_MAX_TICKETS];
} fake_frames;

/* Acquires and submits frame `seq` (user = seq + 1, never NULL). */
int fake_submit_frame(pp_engine *e, fake_frames *f, unsigned seq);
/* Pops one item and checks (cmocka) it is frame `seq` with `status` and,
 * when 0, its own result; releases it. */
void fake_expect_frame(pp_engine *e, fake_frames *f, unsigned seq, int status);

#endif
