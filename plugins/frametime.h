// SPDX-License-Identifier: LGPL-2.1-or-later
/* Timestamps of frames numbered from a stream's start. */
#ifndef GST_PP_FRAMETIME_H
#define GST_PP_FRAMETIME_H

#include <gst/gst.h>

G_BEGIN_DECLS

/* The PTS of frame `n` at fps_n/fps_d frames per second: n scaled in one
 * step, so that the nanosecond rounding of one frame's duration never
 * accumulates (30000/1001 would drift by 0.7 ms over ten hours as a sum).
 * GST_CLOCK_TIME_NONE without a rate. */
GstClockTime gst_pp_frame_pts(guint64 n, gint fps_n, gint fps_d);

G_END_DECLS

#endif
