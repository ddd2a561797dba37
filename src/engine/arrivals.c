// SPDX-License-Identifier: LGPL-2.1-or-later
/* A paced stream's arrivals: a running mean of the intervals and whether
 * they are steady. */
#include "arrivals.h"

/* An interval within a quarter of the mean (or 20 µs) counts as steady;
 * this many in a row make a pace. */
#define STEADY_FRACTION 0.25
#define STEADY_SLACK_NS 20000.0
#define STEADY_COUNT 4
/* Paces worth waking early for: under 200 µs the consumer is rarely idle;
 * over 100 ms (a frame every 10th of a second and slower) a few tens of
 * µs are a small share of a frame's life. */
#define MIN_INTERVAL_NS 200000.0
#define MAX_INTERVAL_NS 100000000.0

void
pp_arrivals_note(pp_arrivals *a, int64_t now_ns)
{
  if (a->last_ns) {
    const double interval = (double) (now_ns - a->last_ns);
    if (!a->interval_ns) {
      a->interval_ns = interval;
    } else {
      const double off =
          interval > a->interval_ns ? interval - a->interval_ns : a->interval_ns - interval;
      const double bound = a->interval_ns * STEADY_FRACTION;
      a->steady = off <= (bound > STEADY_SLACK_NS ? bound : STEADY_SLACK_NS) ? a->steady + 1 : 0;
      a->interval_ns += (interval - a->interval_ns) / 8;
    }
  }
  a->last_ns = now_ns;
}

int64_t
pp_arrivals_next_due(const pp_arrivals *a)
{
  if (a->steady < STEADY_COUNT || a->interval_ns < MIN_INTERVAL_NS ||
      a->interval_ns > MAX_INTERVAL_NS)
    return 0;
  return a->last_ns + (int64_t) a->interval_ns;
}
