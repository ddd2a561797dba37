// SPDX-License-Identifier: LGPL-2.1-or-later
/* Latency and stage-time records, and their percentiles. */
#include "stats.h"

#include <glib.h>
#include <stdlib.h>
#include <string.h>

void
pp_stats_record(pp_stats_recorder *r, const pp_frame_times *host, const pp_stage_times *times)
{
  const int64_t latency_ns = host->popped - host->submit;
  const double us = latency_ns / 1000.0;
  r->host_sum_us[0] += (host->submitted - host->submit) / 1000.0;
  r->host_sum_us[1] += (host->completed - host->submitted) / 1000.0;
  r->host_sum_us[2] += (host->popped - host->completed) / 1000.0;
  r->window[r->frames % PP_STATS_WINDOW] = latency_ns;
  r->frames++;
  r->latency_sum_us += us;
  if (us > r->latency_max_us)
    r->latency_max_us = us;
  if (times && times->mlp_us >= 0) {
    r->stage_sum_us[0] += times->h2d_us;
    r->stage_sum_us[1] += times->mlp_us;
    r->stage_sum_us[2] += times->d2h_us;
    r->timed_frames++;
  }
}

static int
compare_i64(const void *a, const void *b)
{
  const int64_t x = *(const int64_t *) a, y = *(const int64_t *) b;
  return (x > y) - (x < y);
}

/* Nearest-rank percentile of sorted[0..n). */
static double
percentile_us(const int64_t *sorted, size_t n, double p)
{
  size_t rank = (size_t) (p / 100.0 * n + 0.999999);
  rank = rank == 0 ? 1 : rank > n ? n : rank;
  return sorted[rank - 1] / 1000.0;
}

void
pp_stats_summarize(const pp_stats_recorder *r, pp_stats *out)
{
  memset(out, 0, sizeof *out);
  out->frames = r->frames;
  out->h2d_mean_us = out->mlp_mean_us = out->d2h_mean_us = -1;
  if (r->frames == 0)
    return;
  const size_t n = r->frames < PP_STATS_WINDOW ? r->frames : PP_STATS_WINDOW;
  int64_t *sorted = g_new(int64_t, n);
  memcpy(sorted, r->window, n * sizeof *sorted);
  qsort(sorted, n, sizeof *sorted, compare_i64);
  out->latency_mean_us = r->latency_sum_us / r->frames;
  out->latency_p50_us = percentile_us(sorted, n, 50);
  out->latency_p99_us = percentile_us(sorted, n, 99);
  out->latency_max_us = r->latency_max_us;
  out->submit_mean_us = r->host_sum_us[0] / r->frames;
  out->complete_mean_us = r->host_sum_us[1] / r->frames;
  out->handoff_mean_us = r->host_sum_us[2] / r->frames;
  g_free(sorted);
  if (r->timed_frames) {
    out->h2d_mean_us = r->stage_sum_us[0] / r->timed_frames;
    out->mlp_mean_us = r->stage_sum_us[1] / r->timed_frames;
    out->d2h_mean_us = r->stage_sum_us[2] / r->timed_frames;
  }
}
