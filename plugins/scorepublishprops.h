// SPDX-License-Identifier: LGPL-2.1-or-later
/* scorepublish's properties and counts (scorepublishprops.c). */
#ifndef GST_SCORE_PUBLISH_PROPS_H
#define GST_SCORE_PUBLISH_PROPS_H

#include "gstscorepublish.h"

G_BEGIN_DECLS

void gst_score_publish_install_properties(GObjectClass *gobject_class);
void gst_score_publish_init_properties(GstScorePublish *self);

/* The counts, as the stats property and the EOS summary give them;
 * `unacknowledged`: messages sent and not acknowledged in time. */
GstStructure *gst_score_publish_stats(GstScorePublish *self, guint64 unacknowledged);

G_END_DECLS

#endif
