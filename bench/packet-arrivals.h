// SPDX-License-Identifier: LGPL-2.1-or-later
/* One RTP camera's frames, each stamped (wall clock) when its last packet,
 * the RTP marker, left the socket, and again when the frame reached the
 * sink, by the timestamp the frame carries from the jitterbuffer on: for
 * pp-cameras-receiver's --arrivals. */
#ifndef PP_PACKET_ARRIVALS_H
#define PP_PACKET_ARRIVALS_H

#include <gst/gst.h>
#include <stdio.h>

typedef struct _PpArrivals PpArrivals;

PpArrivals *pp_arrivals_new(void);
/* Probes on the socket's output (udpsrc's src) and the jitterbuffer's. */
void pp_arrivals_watch(PpArrivals *a, GstPad *socket, GstPad *ordered);
/* The frame of this timestamp reached the sink (its first time only). */
void pp_arrivals_at_sink(PpArrivals *a, GstClockTime pts);
/* "CAMERA PTS-NS ARRIVAL-US SINK-US" a frame (SINK-US 0: never got
 * there); negative errno on a failed write. */
int pp_arrivals_write(const PpArrivals *a, int camera, FILE *f);
void pp_arrivals_free(PpArrivals *a);

#endif
