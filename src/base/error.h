// SPDX-License-Identifier: LGPL-2.1-or-later
/* How the core says why it refused something: a negative errno to return,
 * and a message for the caller, written once. */
#ifndef PP_ERROR_H
#define PP_ERROR_H

#include <glib.h>

/* Sets *msg to the formatted text where the caller asked for a message
 * (msg not NULL) and has none yet, so the first reason found is the one
 * told; returns -err. A refusal reads
 * `return pp_error(msg, EINVAL, "…", …);`. */
int pp_error(char **msg, int err, const char *fmt, ...) G_GNUC_PRINTF(3, 4);

#endif
