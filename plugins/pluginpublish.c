/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The pingpongpublish plugin: scorepublish, which sends scores to an MQTT
 * broker and to files. A plugin of its own so that libmosquitto is needed
 * only where scores are published. */
#include <gst/gst.h>

#include "gstscorepublish.h"

static gboolean
plugin_init(GstPlugin *plugin)
{
  return GST_ELEMENT_REGISTER(scorepublish, plugin);
}

GST_PLUGIN_DEFINE(GST_VERSION_MAJOR, GST_VERSION_MINOR, pingpongpublish,
                  "Sends cudamlp's scores to an MQTT broker and to files of JSON lines",
                  plugin_init, PP_VERSION, "LGPL", "pingpong",
                  "https://github.com/pingpong/pingpong")
