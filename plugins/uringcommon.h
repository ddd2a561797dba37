// SPDX-License-Identifier: LGPL-2.1-or-later
/* What uringsrc and uringsink share: the io-mode enum, and registering
 * pool memory with io_uring for exactly as long as the memory lives. */
#ifndef GST_PP_URING_COMMON_H
#define GST_PP_URING_COMMON_H

#include <gst/gst.h>

#include "uring_io.h"

G_BEGIN_DECLS

#define GST_TYPE_PP_IO_MODE (gst_pp_io_mode_get_type())
GType gst_pp_io_mode_get_type(void);

/* Holds the open pp_io for the registrations of memories that may outlive
 * it; shared (refcounted) by the element and every memory it registered. */
typedef struct GstPpRegistrar GstPpRegistrar;

GstPpRegistrar *gst_pp_registrar_new(pp_io *io);
/* Before the pp_io is closed: the memories still around stop pointing at it. */
void gst_pp_registrar_detach(GstPpRegistrar *registrar);
void gst_pp_registrar_unref(GstPpRegistrar *registrar);

/* Registers the (single) memory of a pool's `buffer` as a fixed buffer
 * unless it is already. Returns whether this call registered it. */
gboolean gst_pp_registrar_add(GstPpRegistrar *registrar, GstBuffer *buffer);

/* A fixed ring of per-request contexts, oldest first: queue-depth of them
 * allocated at start, so reading or writing a buffer allocates nothing. */
typedef struct {
  gpointer items;
  gsize item_size;
  guint size, head, count;
} GstPpRing;

void gst_pp_ring_init(GstPpRing *ring, gsize item_size, guint size);
void gst_pp_ring_clear(GstPpRing *ring);
/* The next free item (count < size), zeroed. */
gpointer gst_pp_ring_push(GstPpRing *ring);
/* The oldest item, or NULL; valid until the next push. */
gpointer gst_pp_ring_pop(GstPpRing *ring);
/* Takes back the item the last push returned (its request never started). */
void gst_pp_ring_unpush(GstPpRing *ring);

/* A human-readable errno for element errors, e.g. "No such file or directory". */
#define GST_PP_ERRNO_TEXT(rc) g_strerror(-(rc))

G_END_DECLS

#endif
