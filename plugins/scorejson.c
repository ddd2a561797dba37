// SPDX-License-Identifier: LGPL-2.1-or-later
/* A frame's scores as one JSON line (scorejson.h), with json-glib's
 * builder and generator. */
#include "scorejson.h"

#include <gst/gst.h>
#include <json-glib/json-glib.h>
#include <math.h>

/* A cell's place: its sample, output and, for patches, the grid's column
 * and row. */
static void
add_cell(JsonBuilder *b, const GstPpScoreFrame *f, guint i, float v)
{
  const guint sample = i / f->outputs;
  json_builder_begin_object(b);
  json_builder_set_member_name(b, "sample");
  json_builder_add_int_value(b, sample);
  json_builder_set_member_name(b, "output");
  json_builder_add_int_value(b, i % f->outputs);
  if (g_str_equal(f->mapping, "patches") && f->grid_width) {
    json_builder_set_member_name(b, "x");
    json_builder_add_int_value(b, sample % f->grid_width);
    json_builder_set_member_name(b, "y");
    json_builder_add_int_value(b, sample / f->grid_width);
  }
  json_builder_set_member_name(b, "score");
  json_builder_add_double_value(b, v);
  json_builder_end_object(b);
}

static void
add_uint(JsonBuilder *b, const char *name, guint64 v)
{
  json_builder_set_member_name(b, name);
  json_builder_add_int_value(b, (gint64) v);
}

/* Non-finite scores have no JSON number: null, and counted. */
static void
add_stat(JsonBuilder *b, const char *name, double v, gboolean any)
{
  json_builder_set_member_name(b, name);
  if (any && isfinite(v))
    json_builder_add_double_value(b, v);
  else
    json_builder_add_null_value(b);
}

gchar *
gst_pp_score_json(const GstPpScoreMessage *m, const GstPpScoreFrame *f)
{
  const gsize count = (gsize) f->samples * f->outputs;
  double sum = 0, lo = INFINITY, hi = -INFINITY;
  gsize finite = 0, above = 0;
  for (gsize i = 0; i < count; i++) {
    const float v = f->data[i];
    if (!isfinite(v))
      continue;
    finite++;
    sum += v;
    lo = MIN(lo, v);
    hi = MAX(hi, v);
    above += v > m->threshold;
  }
  JsonBuilder *b = json_builder_new();
  json_builder_begin_object(b);
  json_builder_set_member_name(b, "stream");
  json_builder_add_string_value(b, m->stream);
  add_uint(b, "frame", m->frame);
  if (m->missing_before)
    add_uint(b, "missing-before", m->missing_before);
  json_builder_set_member_name(b, "pts");
  if (GST_CLOCK_TIME_IS_VALID(m->pts))
    json_builder_add_int_value(b, (gint64) m->pts);
  else
    json_builder_add_null_value(b);
  add_uint(b, "samples", f->samples);
  add_uint(b, "outputs", f->outputs);
  json_builder_set_member_name(b, "mapping");
  json_builder_add_string_value(b, f->mapping);
  add_uint(b, "grid-width", f->grid_width);
  add_uint(b, "grid-height", f->grid_height);
  add_stat(b, "min", lo, finite > 0);
  add_stat(b, "max", hi, finite > 0);
  add_stat(b, "mean", finite ? sum / finite : 0, finite > 0);
  add_uint(b, "non-finite", count - finite);
  json_builder_set_member_name(b, "threshold");
  json_builder_add_double_value(b, m->threshold);
  add_uint(b, "above-count", above);
  json_builder_set_member_name(b, "above");
  json_builder_begin_array(b);
  for (gsize i = 0, listed = 0; i < count && listed < m->max_cells; i++)
    if (isfinite(f->data[i]) && f->data[i] > m->threshold) {
      add_cell(b, f, (guint) i, f->data[i]);
      listed++;
    }
  json_builder_end_array(b);
  if (m->grid) {
    gchar *base64 = g_base64_encode((const guchar *) f->data, count * sizeof(float));
    json_builder_set_member_name(b, "scores-float32");
    json_builder_add_string_value(b, base64);
    g_free(base64);
  }
  json_builder_end_object(b);
  JsonGenerator *gen = json_generator_new();
  JsonNode *root = json_builder_get_root(b);
  json_generator_set_root(gen, root);
  gchar *text = json_generator_to_data(gen, NULL);
  json_node_unref(root);
  g_object_unref(gen);
  g_object_unref(b);
  return text;
}
