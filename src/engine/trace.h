// SPDX-License-Identifier: LGPL-2.1-or-later
/* A timeline of what cudamlp does, written as Chrome trace-event JSON
 * (Perfetto and chrome://tracing open it): host spans on one track per
 * thread, the device's stages of each frame on one track per slot, all on
 * the host's monotonic clock in microseconds.
 *
 * Recording is lock-free into a buffer of fixed size chosen at open, so a
 * span costs two clock reads and an atomic add, and memory stays bounded:
 * once full, further spans are counted and dropped (the file says how
 * many). The JSON is written at close, off the streaming path; its
 * otherData.origin_ns is its time 0 on the monotonic clock, to line it up
 * with other processes' times (bench/network-breakdown.py). */
#ifndef PP_TRACE_H
#define PP_TRACE_H

#include <stdint.h>

typedef struct pp_trace pp_trace;

/* Spans `capacity` at most; `process` names the host process track. The
 * file is created now, so a path that cannot be written is said at once:
 * negative errno and a message, and no trace. */
int pp_trace_new(const char *path, const char *process, unsigned capacity, pp_trace **out,
                 char **msg);

/* [start_ns, end_ns) of pp_now_ns() on the calling thread's track; `frame`
 * is the frame's sequence number (args), or -1. Safe from any thread; a
 * NULL trace records nothing. */
void pp_trace_host(pp_trace *t, const char *name, int64_t start_ns, int64_t end_ns, int64_t frame);
/* The same on device slot `slot`'s track. */
void pp_trace_device(pp_trace *t, unsigned slot, const char *name, int64_t start_ns, int64_t end_ns,
                     int64_t frame);

/* Writes the file and frees the trace; negative errno and a message if the
 * file cannot be written. */
int pp_trace_close(pp_trace *t, char **msg);

#endif
