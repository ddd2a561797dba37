/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The libraries' log: a handler the application installs, GLib's debug log
 * until then. */
#include <glib.h>

#include "log.h"

static pp_log_write_fn handler_write;
static pp_log_enabled_fn handler_enabled;

void
pp_log_set_handler(pp_log_write_fn write, pp_log_enabled_fn enabled)
{
  g_atomic_pointer_set(&handler_enabled, enabled);
  g_atomic_pointer_set(&handler_write, write);
}

bool
pp_log_enabled(pp_log_level level)
{
  const pp_log_enabled_fn enabled = g_atomic_pointer_get(&handler_enabled);
  if (enabled)
    return enabled(level);
  return g_atomic_pointer_get(&handler_write) != NULL || level <= PP_LOG_DEBUG;
}

void
pp_log_write(pp_log_level level, const char *domain, const char *message)
{
  const pp_log_write_fn write = g_atomic_pointer_get(&handler_write);
  if (write)
    write(level, domain, message);
  else
    g_debug("%s: %s", domain, message);
}

void
pp_log(pp_log_level level, const char *domain, const char *fmt, ...)
{
  if (!pp_log_enabled(level))
    return;
  va_list args;
  va_start(args, fmt);
  g_autofree char *message = g_strdup_vprintf(fmt, args);
  va_end(args);
  pp_log_write(level, domain, message);
}
