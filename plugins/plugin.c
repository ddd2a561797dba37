/* The pingpong plugin: cudamlp, and the io_uring file elements where the
 * build has liburing. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <gst/gst.h>

#include "gstcudamlp.h"
#ifdef PP_HAVE_URING
#include "gsturingsink.h"
#include "gsturingsrc.h"
#endif

static gboolean
plugin_init(GstPlugin *plugin)
{
  gboolean ok = GST_ELEMENT_REGISTER(cudamlp, plugin);
#ifdef PP_HAVE_URING
  ok &= GST_ELEMENT_REGISTER(uringsrc, plugin);
  ok &= GST_ELEMENT_REGISTER(uringsink, plugin);
#endif
  return ok;
}

GST_PLUGIN_DEFINE(GST_VERSION_MAJOR, GST_VERSION_MINOR, pingpong,
                  "Runs a small MLP on every video frame with the GPU's copy and compute engines "
                  "overlapped, and io_uring file I/O",
                  plugin_init, PP_VERSION, "LGPL", "pingpong", "https://example.invalid/pingpong")
