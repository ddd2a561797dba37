/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The pingpongio plugin: uringsrc and uringsink, file and stream I/O
 * through io_uring. It links GLib, GStreamer and liburing only. */
#include <gst/gst.h>

#include "corelog.h"
#include "gsturingsink.h"
#include "gsturingsrc.h"

static gboolean
plugin_init(GstPlugin *plugin)
{
  gst_pp_core_log_install();
  gboolean ok = GST_ELEMENT_REGISTER(uringsrc, plugin);
  ok &= GST_ELEMENT_REGISTER(uringsink, plugin);
  return ok;
}

GST_PLUGIN_DEFINE(GST_VERSION_MAJOR, GST_VERSION_MINOR, pingpongio,
                  "Reads and writes files, pipes and devices through io_uring, into memory that "
                  "downstream (cudamlp's pinned pool) provides",
                  plugin_init, PP_VERSION, "LGPL", "pingpong",
                  "https://github.com/pingpong/pingpong")
