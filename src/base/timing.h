// SPDX-License-Identifier: LGPL-2.1-or-later
/* What timing on the host needs: the monotonic clock every span and
 * latency is read on, and the median of repeated measurements. */
#ifndef PP_TIMING_H
#define PP_TIMING_H

#include <stddef.h>
#include <stdint.h>

/* CLOCK_MONOTONIC in nanoseconds. */
int64_t pp_now_ns(void);

/* Milliseconds from t0 (pp_now_ns) to now. */
double pp_ms_since(int64_t t0);

/* The median of v[0..n), which it sorts; n > 0. */
double pp_median(double *v, size_t n);

#endif
