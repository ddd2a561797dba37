// SPDX-License-Identifier: LGPL-2.1-or-later
/* A frame's last packet is matched to its timestamp by the RTP timestamp
 * it carries: seen at the socket (the stamp) and again at the
 * jitterbuffer's output (where it has its PTS). */
#include "packet-arrivals.h"

#include <errno.h>

#include "stamp-ring.h"

typedef struct {
  GstClockTime pts;
  gint64 unix_us, sink_us;
} arrival;

struct _PpArrivals {
  GMutex lock;
  /* Last packets between the socket and the jitterbuffer's output, by
   * RTP timestamp. */
  PpStampRing markers;
  GArray *frames; /* arrival, in the jitterbuffer's order */
};

PpArrivals *
pp_arrivals_new(void)
{
  PpArrivals *a = g_new0(PpArrivals, 1);
  g_mutex_init(&a->lock);
  a->frames = g_array_new(FALSE, FALSE, sizeof(arrival));
  return a;
}

void
pp_arrivals_free(PpArrivals *a)
{
  if (!a)
    return;
  g_array_free(a->frames, TRUE);
  g_mutex_clear(&a->lock);
  g_free(a);
}

/* An RTP packet's marker bit (the last packet of a frame) and timestamp,
 * read from its fixed header (RFC 3550, 5.1). */
static gboolean
rtp_marker(GstBuffer *buf, guint32 *rtp_ts)
{
  guint8 head[8];
  if (gst_buffer_extract(buf, 0, head, sizeof head) != sizeof head || (head[0] >> 6) != 2 ||
      !(head[1] & 0x80))
    return FALSE;
  *rtp_ts = GST_READ_UINT32_BE(head + 4);
  return TRUE;
}

static GstPadProbeReturn
on_packet(GstPad *pad, GstPadProbeInfo *info, gpointer data)
{
  (void) pad;
  PpArrivals *a = data;
  guint32 rtp_ts;
  if (!rtp_marker(GST_PAD_PROBE_INFO_BUFFER(info), &rtp_ts))
    return GST_PAD_PROBE_OK;
  const gint64 now = g_get_real_time();
  g_mutex_lock(&a->lock);
  pp_stamp_ring_push(&a->markers, rtp_ts, now);
  g_mutex_unlock(&a->lock);
  return GST_PAD_PROBE_OK;
}

static GstPadProbeReturn
on_ordered(GstPad *pad, GstPadProbeInfo *info, gpointer data)
{
  (void) pad;
  PpArrivals *a = data;
  GstBuffer *buf = GST_PAD_PROBE_INFO_BUFFER(info);
  guint32 rtp_ts;
  if (!rtp_marker(buf, &rtp_ts))
    return GST_PAD_PROBE_OK;
  g_mutex_lock(&a->lock);
  arrival f = { GST_BUFFER_PTS(buf), 0, 0 };
  if (pp_stamp_ring_find(&a->markers, rtp_ts, &f.unix_us))
    g_array_append_val(a->frames, f);
  g_mutex_unlock(&a->lock);
  return GST_PAD_PROBE_OK;
}

void
pp_arrivals_watch(PpArrivals *a, GstPad *socket, GstPad *ordered)
{
  gst_pad_add_probe(socket, GST_PAD_PROBE_TYPE_BUFFER, on_packet, a, NULL);
  gst_pad_add_probe(ordered, GST_PAD_PROBE_TYPE_BUFFER, on_ordered, a, NULL);
}

void
pp_arrivals_at_sink(PpArrivals *a, GstClockTime pts)
{
  const gint64 now = g_get_real_time();
  g_mutex_lock(&a->lock);
  /* From the newest back: a frame is found as many steps back as the
   * decoder and what follows it lag behind the socket. The jitterbuffer
   * gives them in timestamp order, so past an older one none matches (a
   * timestamp the decoder made up costs no walk through the whole run). */
  for (guint i = 0; i < a->frames->len; i++) {
    arrival *f = &g_array_index(a->frames, arrival, a->frames->len - 1 - i);
    if (f->pts <= pts) {
      if (f->pts == pts && !f->sink_us)
        f->sink_us = now;
      break;
    }
  }
  g_mutex_unlock(&a->lock);
}

int
pp_arrivals_write(const PpArrivals *a, int camera, FILE *f)
{
  for (guint k = 0; k < a->frames->len; k++) {
    const arrival *x = &g_array_index(a->frames, arrival, k);
    if (fprintf(f, "%d %" G_GUINT64_FORMAT " %" G_GINT64_FORMAT " %" G_GINT64_FORMAT "\n", camera,
                (guint64) x->pts, x->unix_us, x->sink_us) < 0)
      return -errno;
  }
  return 0;
}
