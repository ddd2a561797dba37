// SPDX-License-Identifier: LGPL-2.1-or-later
/* K CUDA contexts for the cameras of one pipeline (pp-cameras-receiver
 * --contexts): the elements of the camera whose bin is named cam<i> get
 * context i mod K when they ask for one (NEED_CONTEXT, answered from the
 * bus's sync handler), where by default the first element to ask makes
 * one that the whole pipeline shares. Needs GStreamer's CUDA library. */
#ifndef PP_CONTEXT_GROUPS_H
#define PP_CONTEXT_GROUPS_H

#include <gst/gst.h>

typedef struct PpContextGroups PpContextGroups;

/* K contexts on device 0, handed out on the pipeline's bus from now on;
 * NULL and *why (to free) if they cannot be made. */
PpContextGroups *pp_context_groups_new(GstElement *pipeline, gint k, gchar **why);
/* After the pipeline is in NULL. NULL is nothing to free. */
void pp_context_groups_free(PpContextGroups *groups);

#endif
