// SPDX-License-Identifier: LGPL-2.1-or-later
/* One run of pingpong-bench: a workload through S appsrc ! cudamlp !
 * fakesink branches in one pipeline, frames pushed from the element's own
 * pinned pool by a thread a branch (as fast as taken, or paced), measured
 * at the sinks after a warm-up, and the element's stats read at the end. */
#ifndef PP_BENCH_RUN_H
#define PP_BENCH_RUN_H

#include "bench.h"
#include "stats.h"

typedef struct {
  char *workloads, *slots, *completion, *precision, *trace_dir, *backend, *devices;
  char *tuning, *plan;
  const char *trace_file; /* the traced run's */
  int frames, warmup, repeats, streams, interval_us, max_batch;
  gboolean shared;
} options;

typedef struct {
  double fps, p50_us, p99_us;
  /* With several streams, each device's share: its streams' measured
   * frames over their own first-to-last span. */
  double device_fps[PP_MAX_DEVICES];
  /* From the element's stats: GPU stages inside the pipeline (sampled), and
   * the host side of a frame's latency. */
  double h2d_us, mlp_us, d2h_us, submit_us, complete_us, handoff_us;
  guint64 staged;
  double batch_mean; /* frames a job (shared backends with max-batch) */
  char plan[512];    /* the element's plan line */
  /* With several streams: a plan line unlike the first stream's, and whose. */
  char other_plan[512];
  guint other_stream;
} run_result;

/* One pipeline run of o->streams branches. With `stages`, also each stage
 * of the first branch's frame timed alone (bench_time_stages). FALSE with
 * a line on stderr when the run failed. */
gboolean bench_run_pipeline(const workload *w, guint slots, const options *o, run_result *out,
                            stage_times *stages);

/* A run of 512 frames at most, traced into o->trace_dir, not measured. */
void bench_trace_run(const workload *w, guint slots, const options *o);

#endif
