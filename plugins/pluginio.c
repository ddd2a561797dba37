/* The pingpongio plugin: uringsrc and uringsink, file and stream I/O
 * through io_uring. It links GLib, GStreamer and liburing only. */
#include <gst/gst.h>

#include "gsturingsink.h"
#include "gsturingsrc.h"

static gboolean
plugin_init(GstPlugin *plugin)
{
  gboolean ok = GST_ELEMENT_REGISTER(uringsrc, plugin);
  ok &= GST_ELEMENT_REGISTER(uringsink, plugin);
  return ok;
}

GST_PLUGIN_DEFINE(GST_VERSION_MAJOR, GST_VERSION_MINOR, pingpongio,
                  "Reads and writes files, pipes and devices through io_uring, into memory that "
                  "downstream (cudamlp's pinned pool) provides",
                  plugin_init, PP_VERSION, "LGPL", "pingpong", "https://example.invalid/pingpong")
