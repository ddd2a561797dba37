/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* cudamlp's Chrome trace: opened at start where asked for, written at stop. */
#include "cudamlptrace.h"

#include "debug_env.h"
#include "trace.h"

/* Spans kept when PINGPONG_TRACE_SPANS says nothing: ~40 bytes each, about
 * ten a frame. */
#define DEFAULT_SPANS (1u << 18)

gchar *
gst_cuda_mlp_trace_path(GstCudaMlp *self)
{
  GST_OBJECT_LOCK(self);
  g_autofree gchar *file = g_strdup(self->settings.trace_file);
  GST_OBJECT_UNLOCK(self);
  const gchar *path = file && *file ? file : pp_debug_env_read().trace;
  if (!path)
    return NULL;
  GString *s = g_string_new(path);
  g_string_replace(s, "{name}", GST_OBJECT_NAME(self), 0);
  return g_string_free(s, FALSE);
}

void
gst_cuda_mlp_open_trace(GstCudaMlp *self, const gchar *path)
{
  if (!path)
    return;
  const unsigned spans = pp_debug_env_read().trace_spans;
  g_autofree gchar *process = g_strdup_printf("%s (host)", GST_OBJECT_NAME(self));
  g_autofree gchar *msg = NULL;
  if (pp_trace_new(path, process, spans ? spans : DEFAULT_SPANS, &self->trace, &msg) < 0) {
    GST_ELEMENT_WARNING(self, RESOURCE, OPEN_WRITE, ("Cannot write the trace; running without it."),
                        ("%s", msg));
    return;
  }
  pp_engine_set_trace(self->engine, self->trace);
}

void
gst_cuda_mlp_close_trace(GstCudaMlp *self)
{
  if (!self->trace)
    return;
  gchar *msg = NULL;
  if (pp_trace_close(g_steal_pointer(&self->trace), &msg) < 0) {
    GST_ELEMENT_WARNING(self, RESOURCE, WRITE, ("Cannot write the trace."), ("%s", msg));
    g_clear_pointer(&msg, g_free);
  }
}
