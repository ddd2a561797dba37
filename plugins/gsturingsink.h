// SPDX-License-Identifier: LGPL-2.1-or-later
/* uringsink: buffers written with io_uring, several writes in flight. */
#ifndef GST_URING_SINK_H
#define GST_URING_SINK_H

#include <gst/base/gstbasesink.h>

#include "uringfile.h"

G_BEGIN_DECLS

#define GST_TYPE_URING_SINK (gst_uring_sink_get_type())
G_DECLARE_FINAL_TYPE(GstUringSink, gst_uring_sink, GST, URING_SINK, GstBaseSink)

GST_ELEMENT_REGISTER_DECLARE(uringsink);

/* A write in flight, from a buffer held until it completes. */
typedef struct {
  GstBuffer *buffer;
  GstMapInfo map;
} GstUringWrite;

struct _GstUringSink {
  GstBaseSink parent;

  /* location, queue-depth, io-mode; from start to stop the open file and
   * its writes in flight (GstUringWrite, oldest first). */
  GstPpUringFile file;
  /* Properties, under the object lock. */
  gboolean append;
  gboolean fsync;

  /* From start to stop. */
  guint64 position;
  /* A write failed and said so: one error however many writes were in
   * flight, and nothing more is written. */
  gboolean failed;
  guint64 stat_writes, stat_bytes;
};

G_END_DECLS

#endif
