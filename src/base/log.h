/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* How the libraries say what they are doing: through a handler the
 * application installs (the plugins map it onto a GStreamer debug
 * category), never straight to stderr. Without a handler, messages go to
 * g_debug, which prints nothing unless G_MESSAGES_DEBUG asks for it. */
#ifndef PP_LOG_H
#define PP_LOG_H

#include <stdbool.h>

typedef enum {
  PP_LOG_ERROR,
  PP_LOG_WARNING,
  PP_LOG_INFO,
  PP_LOG_DEBUG,
  PP_LOG_TRACE, /* per frame */
} pp_log_level;

/* `domain` names the part speaking ("cuda", "engine", "plan"). */
typedef void (*pp_log_write_fn)(pp_log_level level, const char *domain, const char *message);
/* Whether anyone listens at `level`: code that costs something to produce
 * its message (timing every submit) asks first. */
typedef bool (*pp_log_enabled_fn)(pp_log_level level);

/* Installs the handler for the whole process; NULLs restore the default. */
void pp_log_set_handler(pp_log_write_fn write, pp_log_enabled_fn enabled);

bool pp_log_enabled(pp_log_level level);
void pp_log(pp_log_level level, const char *domain, const char *fmt, ...) G_GNUC_PRINTF(3, 4);

/* What pp_log_enabled and pp_log call, for a module with its own copy of
 * this file to forward to the process's handler (cuda_module.h). */
void pp_log_write(pp_log_level level, const char *domain, const char *message);

#endif
