/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The pingpong plugin: cudamlp and scoreoverlay. The io_uring elements are a plugin of their
 * own (pluginio.c), so a pipeline that only reads files never maps
 * GStreamer's CUDA library and what it pulls in. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <gst/gst.h>

#include "corelog.h"
#include "gstcudamlp.h"
#include "gstscoreoverlay.h"
#include "scoresmeta.h"

static gboolean
plugin_init(GstPlugin *plugin)
{
  gst_pp_core_log_install();
  gst_pp_scores_meta_register();
  gboolean ok = GST_ELEMENT_REGISTER(cudamlp, plugin);
  ok &= GST_ELEMENT_REGISTER(scoreoverlay, plugin);
  return ok;
}

GST_PLUGIN_DEFINE(GST_VERSION_MAJOR, GST_VERSION_MINOR, pingpong,
                  "Runs a small MLP on every video frame with the GPU's copy and compute engines "
                  "overlapped",
                  plugin_init, PP_VERSION, "LGPL", "pingpong",
                  "https://github.com/pingpong/pingpong")
