/* A backend for the engine's tests: it "computes" output[0] = input[0] * 2
 * + 1 and completes its slots in random order after random delays, and can
 * hold completions back, refuse submits, fail frames or keep results in the
 * slot until finish. */
#ifndef PP_FAKE_BACKEND_H
#define PP_FAKE_BACKEND_H

#include <glib.h>

#include "backend.h"
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
  int finished;        /* finish calls */
  GArray *pending;     /* slots submitted, not yet completed */
  pp_job jobs[PP_MAX_SLOTS];
  test_rng rng;
  /* Every job submitted, in order: its input's first float and the slot. */
  GArray *inputs, *slots;
} fake_backend;

fake_backend *fake_new(bool hold, uint64_t seed);
void fake_set_hold(fake_backend *f, bool hold);

#endif
