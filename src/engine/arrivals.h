// SPDX-License-Identifier: LGPL-2.1-or-later
/* When a paced stream's next frame is due, from the intervals between the
 * frames before it. The engine's consumer sleeps until shortly before then
 * and waits for the frame awake (engine_paced.c): a thread asleep for a
 * millisecond wakes tens of µs after it is signalled on a VM, which a
 * paced frame would otherwise wait on every time (docs/PERFORMANCE.md,
 * "Latency"). No GStreamer, no threads: the engine holds its lock. */
#ifndef PP_ARRIVALS_H
#define PP_ARRIVALS_H

#include <stdint.h>

typedef struct {
  int64_t last_ns;    /* the last frame's arrival; 0 before the first */
  double interval_ns; /* running mean of the intervals; 0 before the second frame */
  unsigned steady;    /* intervals in a row close to the mean */
} pp_arrivals;

/* A frame arrived at `now_ns` (pp_now_ns). */
void pp_arrivals_note(pp_arrivals *a, int64_t now_ns);

/* When the next frame is due (pp_now_ns), or 0 when frames do not come at
 * a pace worth waking early for: not steady yet, or so fast that the
 * consumer is rarely idle, or so slow that a wake-up is a small part of
 * their interval. */
int64_t pp_arrivals_next_due(const pp_arrivals *a);

#endif
