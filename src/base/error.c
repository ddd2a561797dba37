// SPDX-License-Identifier: LGPL-2.1-or-later
/* pp_error: the core's one way to refuse with a reason (error.h). */
#include "error.h"

#include <stdarg.h>

int
pp_error(char **msg, int err, const char *fmt, ...)
{
  if (msg && !*msg) {
    va_list args;
    va_start(args, fmt);
    *msg = g_strdup_vprintf(fmt, args);
    va_end(args);
  }
  return -err;
}
