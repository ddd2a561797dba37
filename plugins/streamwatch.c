// SPDX-License-Identifier: LGPL-2.1-or-later
/* The stream's watchdog and its missing frames (streamwatch.h). */
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
  w->last_pts = GST_CLOCK_TIME_NONE;
  w->stalled = FALSE;
  w->missing = w->stalls = 0;
  g_mutex_unlock(&w->lock);
}

void
gst_pp_stream_watch_stop(GstPpStreamWatch *w)
{
  g_mutex_lock(&w->lock);
  GstClockID id = w->id;
  w->id = NULL;
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

typedef struct {
  GstPpStreamWatch *w;
  GstObject *owner; /* a reference, for as long as the wait is scheduled */
} stall_wait;

static void
stall_wait_free(gpointer data)
{
  stall_wait *s = data;
  gst_object_unref(s->owner);
  g_free(s);
}

/* The system clock's thread: no frame since the watchdog was armed. */
static gboolean
fired(GstClock *clock, GstClockTime time, GstClockID id, gpointer data)
{
  (void) clock;
  stall_wait *s = data;
  GstPpStreamWatch *w = s->w;
  g_mutex_lock(&w->lock);
  const gboolean now_stalled = w->id == id && !w->stalled;
  if (now_stalled) {
    w->stalled = TRUE;
    w->stalled_since = time;
    w->stalls++;
  }
  const guint ms = w->stall_ms;
  g_mutex_unlock(&w->lock);
  if (now_stalled)
    w->on_stall(s->owner, ms);
  return TRUE;
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
  gst_pp_stream_watch_stop(w);
  g_mutex_lock(&w->lock);
  const GstClockTime now = gst_clock_get_time(w->clock);
  *resumed_ms = w->stalled ? (now - w->stalled_since) / GST_MSECOND + w->stall_ms : 0;
  w->stalled = FALSE;
  *missing = gap(w, pts);
  w->missing += *missing;
  GstClockID id = NULL;
  if (w->stall_ms) {
    id = gst_clock_new_single_shot_id(w->clock, now + w->stall_ms * GST_MSECOND);
    w->id = gst_clock_id_ref(id);
  }
  g_mutex_unlock(&w->lock);
  if (!id)
    return;
  stall_wait *s = g_new(stall_wait, 1);
  *s = (stall_wait){ w, gst_object_ref(w->owner) };
  gst_clock_id_wait_async(id, fired, s, stall_wait_free);
  gst_clock_id_unref(id);
}

void
gst_pp_stream_watch_counts(GstPpStreamWatch *w, guint64 *missing, guint64 *stalls)
{
  g_mutex_lock(&w->lock);
  *missing = w->missing;
  *stalls = w->stalls;
  g_mutex_unlock(&w->lock);
}
