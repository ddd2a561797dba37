// SPDX-License-Identifier: LGPL-2.1-or-later
/* The host's clock and medians (timing.h). */
#include "timing.h"

#include <stdlib.h>
#include <time.h>

int64_t
pp_now_ns(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t) ts.tv_sec * 1000000000 + ts.tv_nsec;
}

double
pp_ms_since(int64_t t0)
{
  return (pp_now_ns() - t0) / 1e6;
}

static int
compare_double(const void *a, const void *b)
{
  const double x = *(const double *) a, y = *(const double *) b;
  return (x > y) - (x < y);
}

double
pp_median(double *v, size_t n)
{
  qsort(v, n, sizeof *v, compare_double);
  return v[n / 2];
}
