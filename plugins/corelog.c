/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The core's log handler, installed once per process, writing to GStreamer's
 * "pingpong" category. */
#include "corelog.h"

#include <gst/gst.h>

#include "log.h"

GST_DEBUG_CATEGORY_STATIC(pp_core_debug);

static GstDebugLevel
gst_level(pp_log_level level)
{
  switch (level) {
    case PP_LOG_ERROR:
      return GST_LEVEL_ERROR;
    case PP_LOG_WARNING:
      return GST_LEVEL_WARNING;
    case PP_LOG_INFO:
      return GST_LEVEL_INFO;
    case PP_LOG_DEBUG:
      return GST_LEVEL_DEBUG;
    default:
      return GST_LEVEL_LOG;
  }
}

static void
write_message(pp_log_level level, const char *domain, const char *message)
{
  GST_CAT_LEVEL_LOG(pp_core_debug, gst_level(level), NULL, "%s: %s", domain, message);
}

static bool
enabled(pp_log_level level)
{
  return gst_debug_category_get_threshold(pp_core_debug) >= gst_level(level);
}

void
gst_pp_core_log_install(void)
{
  GST_DEBUG_CATEGORY_INIT(pp_core_debug, "pingpong", 0, "pingpong's core: engine, backends, plans");
  pp_log_set_handler(write_message, enabled);
}
