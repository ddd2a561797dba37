// SPDX-License-Identifier: LGPL-2.1-or-later
/* Why caps do not fit what an element takes, in words for an error
 * message: "width 8, where it takes [ 16, 2147483647 ]". */
#ifndef GST_PP_CAPS_REASON_H
#define GST_PP_CAPS_REASON_H

#include <gst/gst.h>

G_BEGIN_DECLS

/* The fields of `caps`' first structure that `takes` (caps of the same
 * media type) has no value for, each with what it takes there, against
 * the structure of `takes` that differs least; the media type where none
 * of `takes` has it. g_free the result. */
gchar *gst_pp_caps_reason(const GstCaps *caps, const GstCaps *takes);

G_END_DECLS

#endif
