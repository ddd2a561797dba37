// SPDX-License-Identifier: LGPL-2.1-or-later
/* Whether a stream's frames keep coming, and which never came: a watchdog
 * on the system clock that calls back when no frame has come for a while
 * (one periodic wait per run, not one per frame); and the gaps between
 * frames' timestamps at the stream's frame rate, counted as frames
 * missing. For an element at the end of a stream (scorepublish), which
 * says what it finds. */
#ifndef GST_PP_STREAM_WATCH_H
#define GST_PP_STREAM_WATCH_H

#include <gst/gst.h>

G_BEGIN_DECLS

/* No frame for `ms`: called once per stall, on the system clock's thread. */
typedef void (*GstPpStallFn)(GstObject *owner, guint ms);

typedef struct {
  GMutex lock;
  GstClock *clock;
  GstClockID id;
  GstObject *owner;
  GstPpStallFn on_stall;
  guint stall_ms;
  GstClockTime frame_duration, last_pts;
  GstClockTime last_arrival; /* on the system clock; NONE: no frame due */
  gboolean stalled;
  guint64 missing, stalls;
} GstPpStreamWatch;

void gst_pp_stream_watch_init(GstPpStreamWatch *w);
void gst_pp_stream_watch_clear(GstPpStreamWatch *w);

/* From the first frame on, `on_stall(owner)` after stall_ms (0: never)
 * without one; counts reset. `owner` holds the watch and is kept alive
 * until gst_pp_stream_watch_stop. */
void gst_pp_stream_watch_start(GstPpStreamWatch *w, guint stall_ms, GstPpStallFn on_stall,
                               GstObject *owner);
/* The watchdog stopped (the stream ended, or the element stops). */
void gst_pp_stream_watch_stop(GstPpStreamWatch *w);

/* The frame rate the caps give (fps_n 0: none, no gaps counted). */
void gst_pp_stream_watch_set_rate(GstPpStreamWatch *w, gint fps_n, gint fps_d);

/* A frame with timestamp `pts` came: *missing the frames missing just
 * before it; *resumed_ms how long the stream had been stopped if a stall
 * was said, else 0. */
void gst_pp_stream_watch_frame(GstPpStreamWatch *w, GstClockTime pts, guint64 *missing,
                               guint64 *resumed_ms);

void gst_pp_stream_watch_counts(GstPpStreamWatch *w, guint64 *missing, guint64 *stalls);

G_END_DECLS

#endif
