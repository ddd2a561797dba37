// SPDX-License-Identifier: LGPL-2.1-or-later
/* What the io_uring elements share: the io-mode enum, pool memory registered
 * as fixed buffers, a ring of requests. */
#include "uringcommon.h"

#include <string.h>

struct GstPpRegistrar {
  gint refs;
  GMutex lock;
  pp_io *io; /* NULL once detached */
};

GType
gst_pp_io_mode_get_type(void)
{
  static gsize type = 0;
  static const GEnumValue values[] = {
    { PP_IO_AUTO, "io_uring, or pread/pwrite with a warning where the kernel refuses it", "auto" },
    { PP_IO_URING, "io_uring, or fail", "uring" },
    { PP_IO_SYNC, "pread/pwrite, one request at a time", "sync" },
    { 0, NULL, NULL },
  };
  if (g_once_init_enter(&type))
    g_once_init_leave(&type, g_enum_register_static("GstPpIoMode", values));
  return type;
}

GstPpRegistrar *
gst_pp_registrar_new(pp_io *io)
{
  GstPpRegistrar *r = g_new0(GstPpRegistrar, 1);
  r->refs = 1;
  g_mutex_init(&r->lock);
  r->io = io;
  return r;
}

void
gst_pp_registrar_detach(GstPpRegistrar *r)
{
  g_mutex_lock(&r->lock);
  r->io = NULL;
  g_mutex_unlock(&r->lock);
}

void
gst_pp_registrar_unref(GstPpRegistrar *r)
{
  if (!g_atomic_int_dec_and_test(&r->refs))
    return;
  g_mutex_clear(&r->lock);
  g_free(r);
}

typedef struct {
  GstPpRegistrar *registrar;
  gpointer base;
} registration;

static GQuark
registration_quark(void)
{
  return g_quark_from_static_string("pingpong-uring-registration");
}

/* The memory is being freed: its pages must leave io_uring's table first. */
static void
forget(gpointer data)
{
  registration *reg = data;
  g_mutex_lock(&reg->registrar->lock);
  if (reg->registrar->io)
    pp_io_forget_buffer(reg->registrar->io, reg->base);
  g_mutex_unlock(&reg->registrar->lock);
  gst_pp_registrar_unref(reg->registrar);
  g_free(reg);
}

gboolean
gst_pp_registrar_add(GstPpRegistrar *r, GstBuffer *buffer)
{
  /* Only pool memory comes back again and again; registering memory that
   * is freed after one use would cost two system calls per buffer. */
  if (!buffer->pool || gst_buffer_n_memory(buffer) != 1)
    return FALSE;
  GstMemory *mem = gst_buffer_peek_memory(buffer, 0);
  if (gst_mini_object_get_qdata(GST_MINI_OBJECT_CAST(mem), registration_quark()))
    return FALSE; /* already */
  GstMapInfo map;
  if (!gst_memory_map(mem, &map, GST_MAP_READ))
    return FALSE;
  /* The whole allocation, so any region of it a request uses is covered. */
  guint8 *base = map.data - mem->offset;
  const gsize len = mem->maxsize;
  gst_memory_unmap(mem, &map);
  g_mutex_lock(&r->lock);
  const gboolean ok = r->io && pp_io_register_buffer(r->io, base, len);
  g_mutex_unlock(&r->lock);
  if (!ok)
    return FALSE;
  registration *reg = g_new0(registration, 1);
  reg->registrar = r;
  reg->base = base;
  g_atomic_int_inc(&r->refs);
  gst_mini_object_set_qdata(GST_MINI_OBJECT_CAST(mem), registration_quark(), reg, forget);
  return TRUE;
}

void
gst_pp_ring_init(GstPpRing *ring, gsize item_size, guint size)
{
  ring->items = g_malloc0(item_size * size);
  ring->item_size = item_size;
  ring->size = size;
  ring->head = ring->count = 0;
}

void
gst_pp_ring_clear(GstPpRing *ring)
{
  g_clear_pointer(&ring->items, g_free);
  ring->size = ring->head = ring->count = 0;
}

gpointer
gst_pp_ring_push(GstPpRing *ring)
{
  g_return_val_if_fail(ring->count < ring->size, NULL);
  guint8 *item =
      (guint8 *) ring->items + ((ring->head + ring->count) % ring->size) * ring->item_size;
  ring->count++;
  memset(item, 0, ring->item_size);
  return item;
}

gpointer
gst_pp_ring_pop(GstPpRing *ring)
{
  if (ring->count == 0)
    return NULL;
  guint8 *item = (guint8 *) ring->items + ring->head * ring->item_size;
  ring->head = (ring->head + 1) % ring->size;
  ring->count--;
  return item;
}

void
gst_pp_ring_unpush(GstPpRing *ring)
{
  g_return_if_fail(ring->count > 0);
  ring->count--;
}
