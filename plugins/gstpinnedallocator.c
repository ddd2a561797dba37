// SPDX-License-Identifier: LGPL-2.1-or-later
/* The pinned allocator: page-aligned memory, page-locked for the GPU, spare
 * blocks kept for reuse. */
#include "gstpinnedallocator.h"

#include "backend.h"

GST_DEBUG_CATEGORY_STATIC(gst_pp_pinned_allocator_debug);
#define GST_CAT_DEFAULT gst_pp_pinned_allocator_debug

/* Blocks freed are kept, up to `spare_max`, and handed out again to an
 * allocation of the same size: an upstream element that allocates each
 * frame from the ALLOCATION query's allocator rather than from its pool
 * (gdpdepay, for one) would otherwise map and page-lock (cudaHostRegister)
 * every frame and unlock it again, which costs more than copying it. */
struct _GstPpPinnedAllocator {
  GstAllocator parent;
  gboolean pinned;
  GMutex lock;
  GQueue spare; /* of spare_block, most recently freed first */
  guint spare_max;
};

typedef struct {
  guint8 *data;
  gsize bytes;
} spare_block;

typedef struct {
  GstMemory mem;
  guint8 *data;      /* start of the whole block, shared with sub-memories */
  gsize block_bytes; /* what pp_host_alloc was asked for; root memory only */
} GstPpPinnedMemory;

G_DEFINE_TYPE(GstPpPinnedAllocator, gst_pp_pinned_allocator, GST_TYPE_ALLOCATOR);

/* A spare block of exactly `bytes`, or NULL. */
static guint8 *
take_spare(GstPpPinnedAllocator *self, gsize bytes)
{
  guint8 *data = NULL;
  g_mutex_lock(&self->lock);
  for (GList *l = self->spare.head; l; l = l->next) {
    spare_block *block = l->data;
    if (block->bytes == bytes) {
      data = block->data;
      g_free(block);
      g_queue_delete_link(&self->spare, l);
      break;
    }
  }
  g_mutex_unlock(&self->lock);
  return data;
}

/* Keeps the block if there is room, else frees the least recently freed
 * one (more likely a size no longer asked for). */
static void
give_back(GstPpPinnedAllocator *self, guint8 *data, gsize bytes)
{
  spare_block *evicted = NULL;
  g_mutex_lock(&self->lock);
  if (self->spare_max > 0) {
    spare_block *block = g_new(spare_block, 1);
    *block = (spare_block){ data, bytes };
    g_queue_push_head(&self->spare, block);
    data = NULL;
    if (self->spare.length > self->spare_max)
      evicted = g_queue_pop_tail(&self->spare);
  }
  g_mutex_unlock(&self->lock);
  if (data)
    pp_host_free(data, bytes, self->pinned);
  if (evicted) {
    pp_host_free(evicted->data, evicted->bytes, self->pinned);
    g_free(evicted);
  }
}

static GstMemory *
pinned_alloc(GstAllocator *allocator, gsize size, GstAllocationParams *params)
{
  GstPpPinnedAllocator *self = GST_PP_PINNED_ALLOCATOR(allocator);
  /* The block is page-aligned, which meets any alignment a caller asks for
   * up to a page (O_DIRECT needs 512 or 4096). */
  const gsize bytes = params->prefix + size + params->padding;
  char *msg = NULL;
  guint8 *data = take_spare(self, bytes);
  if (!data)
    data = pp_host_alloc(bytes, self->pinned, &msg);
  if (!data) {
    GST_ERROR_OBJECT(self, "%s", msg);
    g_clear_pointer(&msg, g_free);
    return NULL;
  }
  GstPpPinnedMemory *mem = g_new0(GstPpPinnedMemory, 1);
  gst_memory_init(GST_MEMORY_CAST(mem), params->flags, allocator, NULL, bytes, params->align,
                  params->prefix, size);
  mem->data = data;
  mem->block_bytes = bytes;
  if ((params->flags & GST_MEMORY_FLAG_ZERO_PREFIXED) && params->prefix)
    memset(data, 0, params->prefix);
  if ((params->flags & GST_MEMORY_FLAG_ZERO_PADDED) && params->padding)
    memset(data + params->prefix + size, 0, params->padding);
  return GST_MEMORY_CAST(mem);
}

static void
pinned_free(GstAllocator *allocator, GstMemory *memory)
{
  GstPpPinnedAllocator *self = GST_PP_PINNED_ALLOCATOR(allocator);
  GstPpPinnedMemory *mem = (GstPpPinnedMemory *) memory;
  if (!memory->parent)
    give_back(self, mem->data, mem->block_bytes);
  g_free(mem);
}

static gpointer
pinned_map(GstMemory *memory, gsize maxsize, GstMapFlags flags)
{
  (void) maxsize;
  (void) flags;
  return ((GstPpPinnedMemory *) memory)->data;
}

static void
pinned_unmap(GstMemory *memory)
{
  (void) memory;
}

static GstMemory *
pinned_share(GstMemory *memory, gssize offset, gssize size)
{
  GstPpPinnedMemory *mem = (GstPpPinnedMemory *) memory;
  GstMemory *parent = memory->parent ? memory->parent : memory;
  if (size == -1)
    size = memory->size - offset;
  GstPpPinnedMemory *sub = g_new0(GstPpPinnedMemory, 1);
  gst_memory_init(
      GST_MEMORY_CAST(sub), GST_MINI_OBJECT_FLAGS(parent) | GST_MINI_OBJECT_FLAG_LOCK_READONLY,
      memory->allocator, parent, memory->maxsize, memory->align, memory->offset + offset, size);
  sub->data = mem->data;
  return GST_MEMORY_CAST(sub);
}

static gboolean
pinned_is_span(GstMemory *first, GstMemory *second, gsize *offset)
{
  GstPpPinnedMemory *a = (GstPpPinnedMemory *) first, *b = (GstPpPinnedMemory *) second;
  if (a->data != b->data || first->offset + first->size != second->offset)
    return FALSE;
  if (offset)
    *offset = first->offset - (first->parent ? first->parent->offset : 0);
  return TRUE;
}

/* The last memory is gone (each holds a ref): so are the spare blocks. */
static void
gst_pp_pinned_allocator_finalize(GObject *object)
{
  GstPpPinnedAllocator *self = GST_PP_PINNED_ALLOCATOR(object);
  spare_block *block;
  while ((block = g_queue_pop_head(&self->spare))) {
    pp_host_free(block->data, block->bytes, self->pinned);
    g_free(block);
  }
  g_mutex_clear(&self->lock);
  G_OBJECT_CLASS(gst_pp_pinned_allocator_parent_class)->finalize(object);
}

static void
gst_pp_pinned_allocator_class_init(GstPpPinnedAllocatorClass *klass)
{
  G_OBJECT_CLASS(klass)->finalize = gst_pp_pinned_allocator_finalize;
  GstAllocatorClass *allocator_class = GST_ALLOCATOR_CLASS(klass);
  allocator_class->alloc = GST_DEBUG_FUNCPTR(pinned_alloc);
  allocator_class->free = GST_DEBUG_FUNCPTR(pinned_free);
  GST_DEBUG_CATEGORY_INIT(gst_pp_pinned_allocator_debug, "pppinnedallocator", 0,
                          "pingpong pinned host memory");
}

static void
gst_pp_pinned_allocator_init(GstPpPinnedAllocator *self)
{
  GstAllocator *allocator = GST_ALLOCATOR(self);
  allocator->mem_type = GST_PP_PINNED_MEMORY_TYPE;
  allocator->mem_map = pinned_map;
  allocator->mem_unmap = pinned_unmap;
  allocator->mem_share = pinned_share;
  allocator->mem_is_span = pinned_is_span;
  g_mutex_init(&self->lock);
  g_queue_init(&self->spare);
}

GstAllocator *
gst_pp_pinned_allocator_new(gboolean pinned)
{
  GstPpPinnedAllocator *self = g_object_new(GST_TYPE_PP_PINNED_ALLOCATOR, NULL);
  gst_object_ref_sink(self);
  self->pinned = pinned;
  return GST_ALLOCATOR(self);
}

void
gst_pp_pinned_allocator_set_spare(GstAllocator *allocator, guint blocks)
{
  GstPpPinnedAllocator *self = GST_PP_PINNED_ALLOCATOR(allocator);
  GQueue evicted = G_QUEUE_INIT;
  g_mutex_lock(&self->lock);
  self->spare_max = blocks;
  while (self->spare.length > blocks)
    g_queue_push_tail(&evicted, g_queue_pop_tail(&self->spare));
  g_mutex_unlock(&self->lock);
  spare_block *block;
  while ((block = g_queue_pop_head(&evicted))) {
    pp_host_free(block->data, block->bytes, self->pinned);
    g_free(block);
  }
}

guint
gst_pp_pinned_allocator_n_spare(GstAllocator *allocator)
{
  GstPpPinnedAllocator *self = GST_PP_PINNED_ALLOCATOR(allocator);
  g_mutex_lock(&self->lock);
  const guint n = self->spare.length;
  g_mutex_unlock(&self->lock);
  return n;
}

gboolean
gst_pp_memory_is_pinned(GstMemory *mem)
{
  return gst_memory_is_type(mem, GST_PP_PINNED_MEMORY_TYPE) &&
         GST_PP_PINNED_ALLOCATOR(mem->allocator)->pinned;
}

gboolean
gst_pp_buffer_is_pinned(GstBuffer *buffer)
{
  return gst_buffer_n_memory(buffer) == 1 &&
         gst_pp_memory_is_pinned(gst_buffer_peek_memory(buffer, 0));
}

GstBufferPool *
gst_pp_pinned_pool_new(GstAllocator *allocator, GstCaps *caps, guint size, guint min_buffers,
                       guint max_buffers)
{
  GstBufferPool *pool = gst_buffer_pool_new();
  GstStructure *config = gst_buffer_pool_get_config(pool);
  GstAllocationParams params;
  gst_allocation_params_init(&params);
  params.align = 4095; /* page: what O_DIRECT and cudaHostRegister like */
  gst_buffer_pool_config_set_params(config, caps, size, min_buffers, max_buffers);
  gst_buffer_pool_config_set_allocator(config, allocator, &params);
  if (!gst_buffer_pool_set_config(pool, config)) {
    gst_object_unref(pool);
    return NULL;
  }
  return pool;
}
