// SPDX-License-Identifier: LGPL-2.1-or-later
/* GstAllocator for frame memory that the GPU's copy engines (and io_uring)
 * can use in place: page-aligned anonymous memory, page-locked with
 * cudaHostRegister when the CUDA backend runs. cudamlp offers pools of it
 * upstream in the ALLOCATION query, so a source writes frames straight into
 * memory the GPU reads without a staging copy. */
#ifndef GST_PINNED_ALLOCATOR_H
#define GST_PINNED_ALLOCATOR_H

#include <gst/gst.h>

G_BEGIN_DECLS

#define GST_TYPE_PP_PINNED_ALLOCATOR (gst_pp_pinned_allocator_get_type())
G_DECLARE_FINAL_TYPE(GstPpPinnedAllocator, gst_pp_pinned_allocator, GST, PP_PINNED_ALLOCATOR,
                     GstAllocator)

#define GST_PP_PINNED_MEMORY_TYPE "PingpongPinnedMemory"

/* With `pinned` FALSE the memory is page-aligned but not page-locked (the
 * CPU backend needs no more). */
GstAllocator *gst_pp_pinned_allocator_new(gboolean pinned);

/* Keep up to `blocks` freed blocks (0 at first) for allocations of the
 * same size; fewer if more are kept now. */
void gst_pp_pinned_allocator_set_spare(GstAllocator *allocator, guint blocks);
/* How many are kept now (tests). */
guint gst_pp_pinned_allocator_n_spare(GstAllocator *allocator);

/* TRUE when `mem` came from a pinned allocator of ours. */
gboolean gst_pp_memory_is_pinned(GstMemory *mem);

/* TRUE when the whole of `buffer` is one block of pinned memory. */
gboolean gst_pp_buffer_is_pinned(GstBuffer *buffer);

/* A buffer pool of `size`-byte buffers from `allocator`, already configured. */
GstBufferPool *gst_pp_pinned_pool_new(GstAllocator *allocator, GstCaps *caps, guint size,
                                      guint min_buffers, guint max_buffers);

G_END_DECLS

#endif
