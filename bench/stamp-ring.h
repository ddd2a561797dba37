// SPDX-License-Identifier: LGPL-2.1-or-later
/* The last PP_STAMP_RING times stamped on items at one stage, by a key the
 * items still carry at a later stage (a PTS, an RTP timestamp), for that
 * stage to find its item's: no allocation, the oldest forgotten. The
 * caller locks. */
#ifndef PP_STAMP_RING_H
#define PP_STAMP_RING_H

#include <glib.h>

#define PP_STAMP_RING 64

typedef struct {
  guint64 key[PP_STAMP_RING];
  gint64 us[PP_STAMP_RING];
  guint next;
} PpStampRing;

static inline void
pp_stamp_ring_push(PpStampRing *r, guint64 key, gint64 us)
{
  r->key[r->next % PP_STAMP_RING] = key;
  r->us[r->next % PP_STAMP_RING] = us;
  r->next++;
}

/* The newest stamp of `key`, if the ring still holds one. */
static inline gboolean
pp_stamp_ring_find(const PpStampRing *r, guint64 key, gint64 *us)
{
  for (guint i = 0; i < PP_STAMP_RING && i < r->next; i++) {
    const guint at = (r->next - 1 - i) % PP_STAMP_RING;
    if (r->key[at] == key) {
      *us = r->us[at];
      return TRUE;
    }
  }
  return FALSE;
}

#endif
