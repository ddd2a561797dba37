/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The core's messages (src/base/log.h) into the GStreamer debug category
 * "pingpong": GST_DEBUG=pingpong:5 shows how the CUDA backend chose its
 * plan, pingpong:6 more. */
#ifndef GST_PP_CORE_LOG_H
#define GST_PP_CORE_LOG_H

/* Once per plugin, from plugin_init. */
void gst_pp_core_log_install(void);

#endif
