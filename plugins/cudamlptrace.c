#include "cudamlptrace.h"

#include "trace.h"

/* PINGPONG_TRACE=path.json: a Chrome trace of the run, written at stop;
 * "{name}" in the path becomes the element's name (several cudamlps). */
gchar *
gst_cuda_mlp_trace_path(GstCudaMlp *self)
{
  const gchar *path = g_getenv("PINGPONG_TRACE");
  if (!path || !*path)
    return NULL;
  GString *s = g_string_new(path);
  g_string_replace(s, "{name}", GST_OBJECT_NAME(self), 0);
  return g_string_free(s, FALSE);
}

/* Spans kept at most (PINGPONG_TRACE_SPANS): ~40 bytes each, about ten a
 * frame. */
guint
gst_cuda_mlp_trace_capacity(void)
{
  const gchar *spans = g_getenv("PINGPONG_TRACE_SPANS");
  guint64 n = 0;
  if (!spans || !g_ascii_string_to_unsigned(spans, 10, 1, 1u << 26, &n, NULL))
    n = 1u << 18;
  return (guint) n;
}

void
gst_cuda_mlp_close_trace(GstCudaMlp *self)
{
  if (!self->trace)
    return;
  gchar *msg = NULL;
  if (pp_trace_close(g_steal_pointer(&self->trace), &msg) < 0) {
    GST_ELEMENT_WARNING(self, RESOURCE, WRITE, ("Cannot write the trace."), ("%s", msg));
    g_free(msg);
  }
}
