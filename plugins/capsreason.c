// SPDX-License-Identifier: LGPL-2.1-or-later
/* Why caps do not fit (capsreason.h). */
#include "capsreason.h"

typedef struct {
  const GstStructure *takes;
  GString *reason;
  guint conflicts;
} field_check;

static gboolean
check_field(GQuark field, const GValue *value, gpointer data)
{
  field_check *c = data;
  const GValue *allowed = gst_structure_id_get_value(c->takes, field);
  if (!allowed || gst_value_intersect(NULL, value, allowed))
    return TRUE;
  g_autofree gchar *have = gst_value_serialize(value), *want = gst_value_serialize(allowed);
  g_string_append_printf(c->reason, "%s%s %s, where it takes %s", c->conflicts ? "; " : "",
                         g_quark_to_string(field), have, want);
  c->conflicts++;
  return TRUE;
}

gchar *
gst_pp_caps_reason(const GstCaps *caps, const GstCaps *takes)
{
  if (gst_caps_is_empty(caps))
    return g_strdup("the caps are empty");
  const GstStructure *ours = gst_caps_get_structure(caps, 0);
  gchar *best = NULL;
  guint fewest = G_MAXUINT;
  for (guint i = 0; i < gst_caps_get_size(takes); i++) {
    const GstStructure *t = gst_caps_get_structure(takes, i);
    if (!gst_structure_has_name(t, gst_structure_get_name(ours)))
      continue;
    field_check c = { t, g_string_new(NULL), 0 };
    gst_structure_foreach(ours, check_field, &c);
    if (c.conflicts < fewest) {
      fewest = c.conflicts;
      g_free(best);
      best = g_string_free(c.reason, FALSE);
    } else {
      g_string_free(c.reason, TRUE);
    }
  }
  if (best && fewest == 0) { /* each field fits alone; together they do not */
    g_free(best);
    best = g_strdup("these fields together");
  }
  return best ? best
              : g_strdup_printf("%s, which it does not take at all", gst_structure_get_name(ours));
}
