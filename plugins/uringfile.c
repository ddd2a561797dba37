// SPDX-License-Identifier: LGPL-2.1-or-later
/* The file side of uringsrc and uringsink (uringfile.h). */
#include "uringfile.h"

#include <errno.h>

#define CONFIG_FLAGS (G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY)

void
gst_pp_uring_file_init(GstPpUringFile *f, guint default_depth)
{
  *f = (GstPpUringFile){ .queue_depth = default_depth, .io_mode = PP_IO_AUTO };
}

void
gst_pp_uring_file_clear(GstPpUringFile *f)
{
  g_clear_pointer(&f->location, g_free);
}

void
gst_pp_uring_file_install_properties(GObjectClass *klass, const gchar *verb,
                                     const gchar *depth_blurb, guint default_depth)
{
  g_autofree gchar *location = g_strdup_printf("Path of the file to %s", verb);
  g_autofree gchar *mode = g_strdup_printf("How %ss are issued", verb);
  /* Interned: the specs keep the strings, for as long as the class lives. */
  g_object_class_install_property(klass, GST_PP_URING_PROP_LOCATION,
                                  g_param_spec_string("location", "File location",
                                                      g_intern_string(location), NULL,
                                                      CONFIG_FLAGS));
  g_object_class_install_property(klass, GST_PP_URING_PROP_QUEUE_DEPTH,
                                  g_param_spec_uint("queue-depth", "Queue depth", depth_blurb, 1,
                                                    PP_IO_MAX_DEPTH, default_depth, CONFIG_FLAGS));
  g_object_class_install_property(klass, GST_PP_URING_PROP_IO_MODE,
                                  g_param_spec_enum("io-mode", "I/O mode", g_intern_string(mode),
                                                    GST_TYPE_PP_IO_MODE, PP_IO_AUTO, CONFIG_FLAGS));
  gst_type_mark_as_plugin_api(GST_TYPE_PP_IO_MODE, 0);
}

gboolean
gst_pp_uring_file_set_property(GstPpUringFile *f, guint prop_id, const GValue *value)
{
  switch (prop_id) {
    case GST_PP_URING_PROP_LOCATION:
      g_free(f->location);
      f->location = g_value_dup_string(value);
      return TRUE;
    case GST_PP_URING_PROP_QUEUE_DEPTH:
      f->queue_depth = g_value_get_uint(value);
      return TRUE;
    case GST_PP_URING_PROP_IO_MODE:
      f->io_mode = g_value_get_enum(value);
      return TRUE;
    default:
      return FALSE;
  }
}

gboolean
gst_pp_uring_file_get_property(const GstPpUringFile *f, guint prop_id, GValue *value)
{
  switch (prop_id) {
    case GST_PP_URING_PROP_LOCATION:
      g_value_set_string(value, f->location);
      return TRUE;
    case GST_PP_URING_PROP_QUEUE_DEPTH:
      g_value_set_uint(value, f->queue_depth);
      return TRUE;
    case GST_PP_URING_PROP_IO_MODE:
      g_value_set_enum(value, f->io_mode);
      return TRUE;
    default:
      return FALSE;
  }
}

static void
post_open_error(GstElement *element, const gchar *location, gboolean reading, int rc,
                const gchar *msg)
{
  const gchar *how = reading ? "reading" : "writing";
  if (rc == -ENOENT && reading)
    GST_ELEMENT_ERROR(element, RESOURCE, NOT_FOUND,
                      ("Could not open file \"%s\" for %s: %s.", location, how, msg), ("%s", msg));
  else if (rc == -EISDIR)
    GST_ELEMENT_ERROR(element, RESOURCE, OPEN_READ_WRITE,
                      ("\"%s\" is a directory: set location to a file.", location), ("%s", msg));
  else if (reading)
    GST_ELEMENT_ERROR(element, RESOURCE, OPEN_READ,
                      ("Could not open file \"%s\" for reading: %s.", location, msg), ("%s", msg));
  else
    GST_ELEMENT_ERROR(element, RESOURCE, OPEN_WRITE,
                      ("Could not open file \"%s\" for writing: %s.", location, msg), ("%s", msg));
}

gboolean
gst_pp_uring_file_open(GstPpUringFile *f, GstElement *element, pp_io_options opts,
                       gsize request_size)
{
  const gboolean reading = opts.access == PP_IO_READ;
  GST_OBJECT_LOCK(element);
  g_autofree gchar *location = g_strdup(f->location);
  opts.mode = f->io_mode;
  opts.queue_depth = f->queue_depth;
  GST_OBJECT_UNLOCK(element);
  if (!location || !*location) {
    GST_ELEMENT_ERROR(element, RESOURCE, NOT_FOUND,
                      ("No file name specified for %s: set the location property.",
                       reading ? "reading" : "writing"),
                      (NULL));
    return FALSE;
  }
  g_autofree gchar *msg = NULL;
  const int rc = pp_io_open(location, &opts, &f->io, &msg);
  if (rc < 0) {
    post_open_error(element, location, reading, rc, msg);
    return FALSE;
  }
  const char *fallback = pp_io_fallback(f->io);
  if (fallback && opts.mode == PP_IO_AUTO)
    GST_ELEMENT_WARNING(element, RESOURCE, SETTINGS,
                        ("io_uring is not available; %s with %s.", reading ? "reading" : "writing",
                         reading ? "pread" : "pwrite"),
                        ("%s", fallback));
  f->reading = reading;
  f->registrar = gst_pp_registrar_new(f->io);
  const gboolean in_order = !reading && pp_io_is_stream(f->io);
  gst_pp_ring_init(&f->requests, request_size, in_order ? 1 : opts.queue_depth);
  return TRUE;
}

void
gst_pp_uring_file_close(GstPpUringFile *f)
{
  if (!f->io)
    return;
  gst_pp_ring_clear(&f->requests);
  gst_pp_registrar_detach(f->registrar);
  g_clear_pointer(&f->registrar, gst_pp_registrar_unref);
  g_clear_pointer(&f->io, pp_io_close);
}

const gchar *
gst_pp_uring_file_io_name(const GstPpUringFile *f)
{
  if (!f->io || !pp_io_fallback(f->io))
    return "io_uring";
  return f->reading ? "pread" : "pwrite";
}
