// SPDX-License-Identifier: LGPL-2.1-or-later
/* What uringsrc and uringsink have alike: the file properties both take
 * (location, queue-depth, io-mode) and, from start to stop, the open file
 * with its registrar of pool memory and its ring of requests, opened with
 * the element errors a user reads. */
#ifndef GST_PP_URING_FILE_H
#define GST_PP_URING_FILE_H

#include <gst/gst.h>

#include "uring_io.h"
#include "uringcommon.h"

G_BEGIN_DECLS

typedef struct {
  /* Properties, under the element's object lock. */
  gchar *location;
  guint queue_depth;
  pp_io_mode io_mode;
  /* From open to close. */
  pp_io *io;
  gboolean reading;
  GstPpRegistrar *registrar;
  GstPpRing requests; /* the element's per-request contexts, oldest first */
} GstPpUringFile;

/* The property ids both elements give these first; theirs follow. */
enum {
  GST_PP_URING_PROP_LOCATION = 1,
  GST_PP_URING_PROP_QUEUE_DEPTH,
  GST_PP_URING_PROP_IO_MODE,
  GST_PP_URING_PROP_OWN, /* the element's first own property id */
};

void gst_pp_uring_file_init(GstPpUringFile *f, guint default_depth);
/* Frees the location; the file must be closed. */
void gst_pp_uring_file_clear(GstPpUringFile *f);

/* `verb`: "read" or "write", for the descriptions. */
void gst_pp_uring_file_install_properties(GObjectClass *klass, const gchar *verb,
                                          const gchar *depth_blurb, guint default_depth);
/* TRUE when `prop_id` is one of the three; call with the object lock held. */
gboolean gst_pp_uring_file_set_property(GstPpUringFile *f, guint prop_id, const GValue *value);
gboolean gst_pp_uring_file_get_property(const GstPpUringFile *f, guint prop_id, GValue *value);

/* Opens the file for `element` as `opts` asks (access and direct; mode and
 * depth come from the properties), with `request_size`-byte request
 * contexts: queue-depth of them, or one for a stream being written, whose
 * writes land in the order they run. On failure posts the element error
 * and returns FALSE; where io_uring is refused and io-mode is auto, warns
 * once. */
gboolean gst_pp_uring_file_open(GstPpUringFile *f, GstElement *element, pp_io_options opts,
                                gsize request_size);
/* Closes what open opened; the caller has waited for its requests. */
void gst_pp_uring_file_close(GstPpUringFile *f);

/* "io_uring", or the fallback's call ("pread", "pwrite"), for stats. */
const gchar *gst_pp_uring_file_io_name(const GstPpUringFile *f);

G_END_DECLS

#endif
