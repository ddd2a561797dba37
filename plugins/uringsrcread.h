// SPDX-License-Identifier: LGPL-2.1-or-later
/* uringsrc's reads: a window of reads kept ahead of what downstream takes
 * in order (a file read front to back, or a stream), and reads of exactly
 * the range asked for (a demuxer pulling, a seek, a size that is not the
 * blocksize). Failures are posted as element errors, the first only: the
 * reads in flight behind it fail alike. */
#ifndef GST_URING_SRC_READ_H
#define GST_URING_SRC_READ_H

#include <gst/base/gstbasesrc.h>

#include "uringfile.h"

G_BEGIN_DECLS

/* A read in flight, into a buffer from the negotiated pool (read ahead) or
 * of its own (exact). */
typedef struct {
  GstBuffer *buffer;
  GstMapInfo map;
  guint64 offset;
  guint skip; /* bytes read before `offset` to keep an O_DIRECT read aligned */
} GstUringRead;

typedef struct {
  GstBaseSrc *src;      /* for the negotiated pool, and errors */
  GstPpUringFile *file; /* the element's: the io, and its ring of GstUringRead */
  gboolean direct;
  /* A FIFO, pipe, character device or stdin: no size, no seeking, one read
   * in flight at a time (in order), EOS when the writer closes. */
  gboolean stream;
  gboolean stream_ended;
  guint64 file_size;
  guint block;      /* bytes per read ahead */
  guint window;     /* reads kept ahead now, 1..queue-depth */
  guint ready_run;  /* reads in a row that were done when wanted */
  guint64 read_pos; /* where the next read ahead starts */
  guint64 expected; /* the offset the read ahead serves next */
  gboolean failed;  /* an error was posted */
  guint64 registered;
} GstUringReader;

/* Bytes a buffer needs for a read ahead of `block` bytes: O_DIRECT reads
 * whole 4096-byte blocks. */
guint gst_uring_reader_buffer_size(guint block, gboolean direct);
/* From the open file; `block` bytes a read ahead. */
void gst_uring_reader_start(GstUringReader *r, GstBaseSrc *src, GstPpUringFile *file, guint block,
                            gboolean direct);
/* Waits for every read in flight and drops its buffer (a seek, stop). */
void gst_uring_reader_cancel(GstUringReader *r);
/* Whether `size` bytes at `offset` are what the read ahead serves next:
 * the block after the last, or the file's last short one. */
gboolean gst_uring_reader_in_order(const GstUringReader *r, guint64 offset, guint size);
/* The next block, read ahead (in order: gst_uring_reader_in_order). EOS
 * at the end. */
GstFlowReturn gst_uring_reader_next(GstUringReader *r, guint64 offset, GstBuffer **out);
/* Exactly `size` bytes at `offset`, fewer only where the file ends; EOS
 * at or past its end. Whatever was read ahead is dropped. */
GstFlowReturn gst_uring_reader_exact(GstUringReader *r, guint64 offset, guint size,
                                     GstBuffer **out);

G_END_DECLS

#endif
