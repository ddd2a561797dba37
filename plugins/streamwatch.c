// SPDX-License-Identifier: LGPL-2.1-or-later
/* The stream's watchdog and its missing frames (streamwatch.h). The
 * watchdog is one periodic wait on the system clock for the whole run,
 * looking at when the last frame came: a frame costs a clock reading
 * under a lock, no allocation and no rescheduling. */
#include "streamwatch.h"

#include <string.h>

void
gst_pp_stream_watch_init(GstPpStreamWatch *w)
{
  memset(w, 0, sizeof *w);
  g_mutex_init(&w->lock);
}

void
gst_pp_stream_watch_clear(GstPpStreamWatch *w)
{
  gst_pp_stream_watch_stop(w);
  gst_clear_object(&w->clock);
  g_mutex_clear(&w->lock);
}

/* What the periodic wait holds: the watch, and a reference to its owner
 * (whose struct the watch is) for as long as the wait is scheduled. */
typedef struct {
  GstPpStreamWatch *w;
  GstObject *owner;
} waiter;

static void
waiter_free(gpointer data)
{
  waiter *wt = data;
  gst_object_unref(wt->owner);
  g_free(wt);
}

/* The system clock's thread, a few times per stall_ms: no frame for
 * stall_ms since the last one is a stall, said once. */
static gboolean
check(GstClock *clock, GstClockTime now, GstClockID id, gpointer data)
{
  (void) clock, (void) id;
  GstPpStreamWatch *w = ((waiter *) data)->w;
  g_mutex_lock(&w->lock);
  const gboolean now_stalled = GST_CLOCK_TIME_IS_VALID(w->last_arrival) && !w->stalled &&
                               now >= w->last_arrival + w->stall_ms * GST_MSECOND;
  if (now_stalled) {
    w->stalled = TRUE;
    w->stalls++;
  }
  const guint ms = w->stall_ms;
  GstObject *owner = w->owner;
  g_mutex_unlock(&w->lock);
  if (now_stalled)
    w->on_stall(owner, ms);
  return TRUE;
}

void
gst_pp_stream_watch_start(GstPpStreamWatch *w, guint stall_ms, GstPpStallFn on_stall,
                          GstObject *owner)
{
  gst_pp_stream_watch_stop(w);
  g_mutex_lock(&w->lock);
  if (!w->clock)
    w->clock = gst_system_clock_obtain();
  w->owner = owner;
  w->on_stall = on_stall;
  w->stall_ms = stall_ms;
  w->last_pts = w->last_arrival = GST_CLOCK_TIME_NONE;
  w->stalled = FALSE;
  w->missing = w->stalls = 0;
  GstClockID id = NULL;
  if (stall_ms) {
    /* Checked four times per stall_ms: said at most a quarter late. */
    const GstClockTime period = MAX(stall_ms * GST_MSECOND / 4, GST_MSECOND);
    id = gst_clock_new_periodic_id(w->clock, gst_clock_get_time(w->clock) + period, period);
    w->id = gst_clock_id_ref(id);
  }
  g_mutex_unlock(&w->lock);
  if (id) {
    waiter *wt = g_new(waiter, 1);
    *wt = (waiter){ w, gst_object_ref(owner) };
    gst_clock_id_wait_async(id, check, wt, waiter_free);
    gst_clock_id_unref(id);
  }
}

void
gst_pp_stream_watch_stop(GstPpStreamWatch *w)
{
  g_mutex_lock(&w->lock);
  GstClockID id = w->id;
  w->id = NULL;
  w->last_arrival = GST_CLOCK_TIME_NONE; /* no frame is due */
  g_mutex_unlock(&w->lock);
  if (id) {
    gst_clock_id_unschedule(id);
    gst_clock_id_unref(id);
  }
}

void
gst_pp_stream_watch_set_rate(GstPpStreamWatch *w, gint fps_n, gint fps_d)
{
  g_mutex_lock(&w->lock);
  w->frame_duration =
      fps_n > 0 && fps_d > 0 ? gst_util_uint64_scale_int(GST_SECOND, fps_d, fps_n) : 0;
  g_mutex_unlock(&w->lock);
}

/* A gap of g frame durations from the last frame is g − 1 missing. */
static guint64
gap(GstPpStreamWatch *w, GstClockTime pts)
{
  const GstClockTime last = w->last_pts, d = w->frame_duration;
  if (GST_CLOCK_TIME_IS_VALID(pts))
    w->last_pts = pts;
  if (!d || !GST_CLOCK_TIME_IS_VALID(last) || !GST_CLOCK_TIME_IS_VALID(pts) || pts <= last)
    return 0;
  const guint64 frames = (pts - last + d / 2) / d;
  return frames > 1 ? frames - 1 : 0;
}

void
gst_pp_stream_watch_frame(GstPpStreamWatch *w, GstClockTime pts, guint64 *missing,
                          guint64 *resumed_ms)
{
  g_mutex_lock(&w->lock);
  const GstClockTime now = w->clock ? gst_clock_get_time(w->clock) : GST_CLOCK_TIME_NONE;
  *resumed_ms = w->stalled && GST_CLOCK_TIME_IS_VALID(w->last_arrival)
                    ? (now - w->last_arrival) / GST_MSECOND
                    : 0;
  w->stalled = FALSE;
  w->last_arrival = now;
  *missing = gap(w, pts);
  w->missing += *missing;
  g_mutex_unlock(&w->lock);
}

void
gst_pp_stream_watch_counts(GstPpStreamWatch *w, guint64 *missing, guint64 *stalls)
{
  g_mutex_lock(&w->lock);
  *missing = w->missing;
  *stalls = w->stalls;
  g_mutex_unlock(&w->lock);
}
