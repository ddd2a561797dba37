// SPDX-License-Identifier: LGPL-2.1-or-later
/* uringsrc: a file read with io_uring, several reads ahead, into pool buffers. */
#ifndef GST_URING_SRC_H
#define GST_URING_SRC_H

#include <gst/base/gstbasesrc.h>

#include "uringfile.h"

G_BEGIN_DECLS

#define GST_TYPE_URING_SRC (gst_uring_src_get_type())
G_DECLARE_FINAL_TYPE(GstUringSrc, gst_uring_src, GST, URING_SRC, GstBaseSrc)

GST_ELEMENT_REGISTER_DECLARE(uringsrc);

/* A read in flight, into a buffer from the negotiated pool. */
typedef struct {
  GstBuffer *buffer;
  GstMapInfo map;
  guint64 offset;
} GstUringRead;

struct _GstUringSrc {
  GstBaseSrc parent;

  /* location, queue-depth, io-mode; from start to stop the open file and
   * its reads in flight (GstUringRead, oldest first). */
  GstPpUringFile file;
  /* Properties, under the object lock. */
  gboolean direct;
  GstCaps *caps;

  /* From start to stop. */
  guint64 file_size;
  /* A FIFO, pipe, character device or stdin: no size, no seeking, one read
   * in flight at a time (in order), EOS when the writer closes. */
  gboolean stream;
  gboolean stream_ended;
  guint window;        /* reads kept ahead now, 1..queue-depth (adapt_window) */
  guint ready_run;     /* reads in a row that were done when wanted */
  guint64 read_pos;    /* where the next read-ahead starts */
  guint64 expected;    /* the offset create() should be asked for next */
  guint block;         /* bytes per read */
  guint64 frame_bytes; /* of the caps property, or 0 */
  gint fps_n, fps_d;   /* their framerate, 0/1 without one */
  gboolean timed;      /* buffers are frames: timestamps from the frame number */
  guint64 stat_reads, stat_bytes, stat_registered;
};

G_END_DECLS

#endif
