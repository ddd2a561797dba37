// SPDX-License-Identifier: LGPL-2.1-or-later
/* uringsrc: a file read with io_uring, several reads ahead, into pool buffers. */
#ifndef GST_URING_SRC_H
#define GST_URING_SRC_H

#include <gst/base/gstbasesrc.h>

#include "uringfile.h"
#include "uringsrcread.h"

G_BEGIN_DECLS

#define GST_TYPE_URING_SRC (gst_uring_src_get_type())
G_DECLARE_FINAL_TYPE(GstUringSrc, gst_uring_src, GST, URING_SRC, GstBaseSrc)

GST_ELEMENT_REGISTER_DECLARE(uringsrc);

struct _GstUringSrc {
  GstBaseSrc parent;

  /* location, queue-depth, io-mode; from start to stop the open file and
   * its reads in flight (GstUringRead, oldest first). */
  GstPpUringFile file;
  /* Properties, under the object lock. */
  gboolean direct;
  GstCaps *caps;
  /* The caps were checked against downstream's at start (until stop). */
  gboolean caps_checked;

  /* From start to stop. */
  GstUringReader reader;
  guint64 frame_bytes; /* of the caps property, or 0 */
  gint fps_n, fps_d;   /* their framerate, 0/1 without one */
  gboolean timed;      /* buffers are frames: timestamps from the frame number */
  guint64 stat_reads, stat_bytes;
};

G_END_DECLS

#endif
