// SPDX-License-Identifier: LGPL-2.1-or-later
/* Per-frame latency and stage-time records, summarised on request. */
#ifndef PP_STATS_H
#define PP_STATS_H

#include <stdint.h>

#include "backend.h"

/* Percentiles cover the most recent frames only, so a long run reports its
 * current behaviour and the memory stays fixed. */
#define PP_STATS_WINDOW 4096

typedef struct {
  uint64_t frames;
  double latency_mean_us; /* over every frame */
  double latency_p50_us;  /* over the last PP_STATS_WINDOW frames */
  double latency_p99_us;
  double latency_max_us;
  double h2d_mean_us; /* negative when the backend does not time stages */
  double mlp_mean_us;
  double d2h_mean_us;
  uint64_t staged_inputs; /* frames copied into staging memory before upload */
  uint64_t device_inputs; /* frames read from device memory: no upload */
  /* Frames of a paced stream that the consumer, woken before they were
   * due, submitted itself (completion=consumer; engine_paced.c). */
  uint64_t consumer_submits;
  /* Where a frame's latency goes, means in microseconds: the backend's
   * submit call, from its return to the completion callback (device work
   * plus launch and callback latency), and from the callback to pop. */
  double submit_mean_us, complete_mean_us, handoff_mean_us;
} pp_stats;

/* One slot's share, for backends spread over devices: a device's figures
 * are the sums over its slots. */
typedef struct {
  uint64_t frames;
  double latency_sum_us; /* submit to pop */
  uint64_t timed_frames; /* those with device stage times */
  double mlp_sum_us;
} pp_slot_stats;

/* Host timestamps of one frame, nanoseconds. */
typedef struct {
  int64_t submit, submitted, completed, popped;
} pp_frame_times;

typedef struct {
  int64_t window[PP_STATS_WINDOW];
  uint64_t frames;
  double latency_sum_us, latency_max_us;
  double stage_sum_us[3];
  uint64_t timed_frames;
  double host_sum_us[3];
} pp_stats_recorder;

void pp_stats_record(pp_stats_recorder *r, const pp_frame_times *host, const pp_stage_times *times);
void pp_stats_summarize(const pp_stats_recorder *r, pp_stats *out);

#endif
