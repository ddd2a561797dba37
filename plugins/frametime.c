// SPDX-License-Identifier: LGPL-2.1-or-later
/* Frame timestamps scaled from the frame number (frametime.h). */
#include "frametime.h"

GstClockTime
gst_pp_frame_pts(guint64 n, gint fps_n, gint fps_d)
{
  if (fps_n <= 0 || fps_d <= 0)
    return GST_CLOCK_TIME_NONE;
  return gst_util_uint64_scale(n, GST_SECOND * (guint64) fps_d, (guint64) fps_n);
}
