// SPDX-License-Identifier: LGPL-2.1-or-later
/* cudamlp's pinned allocator keeps the blocks of frames it finished and
 * hands them to the next allocation of the same size (an upstream element
 * that allocates every frame from the ALLOCATION query's allocator, such as
 * gdpdepay, would otherwise map and page-lock each one): how many blocks it
 * keeps, which it hands back, and that they go with it. The allocator is
 * built into this test, not loaded with the plugin, and maps memory without
 * page-locking it (as for the CPU backend); test_depayloaded.c runs it in a
 * pipeline, pinned on the GPU. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <gst/gst.h>
#include <string.h>

#include "gstpinnedallocator.h"
#include "testutil.h"
#include "gstmain.h"

static GstMemory *
filled(GstAllocator *allocator, gsize size, guint8 value)
{
  GstMemory *mem = gst_allocator_alloc(allocator, size, NULL);
  assert_non_null(mem);
  GstMapInfo map;
  assert_true(gst_memory_map(mem, &map, GST_MAP_WRITE));
  assert_int_equal((guintptr) map.data % 4096, 0);
  memset(map.data, value, map.size);
  gst_memory_unmap(mem, &map);
  return mem;
}

static guint8 *
data_of(GstMemory *mem)
{
  GstMapInfo map;
  assert_true(gst_memory_map(mem, &map, GST_MAP_READ));
  guint8 *data = map.data;
  gst_memory_unmap(mem, &map);
  return data;
}

static void
test_spare_blocks(void **state)
{
  (void) state;
  GstAllocator *allocator = gst_pp_pinned_allocator_new(FALSE);
  const gsize frame = 3 * 4096 + 100, other = 4096;

  /* Nothing kept until asked to. */
  gst_memory_unref(filled(allocator, frame, 1));
  assert_int_equal(gst_pp_pinned_allocator_n_spare(allocator), 0);

  gst_pp_pinned_allocator_set_spare(allocator, 2);
  GstMemory *a = filled(allocator, frame, 2);
  guint8 *block = data_of(a);
  gst_memory_unref(a);
  assert_int_equal(gst_pp_pinned_allocator_n_spare(allocator), 1);
  /* Another size does not take it; the same size does, whole and usable. */
  GstMemory *small = filled(allocator, other, 3);
  assert_int_equal(gst_pp_pinned_allocator_n_spare(allocator), 1);
  GstMemory *b = filled(allocator, frame, 4);
  assert_ptr_equal(data_of(b), block);
  assert_int_equal(gst_pp_pinned_allocator_n_spare(allocator), 0);
  assert_int_equal(gst_memory_get_sizes(b, NULL, NULL), frame);

  /* Three freed, two kept; fewer allowed, fewer kept. */
  GstMemory *c = filled(allocator, frame, 5);
  gst_memory_unref(b), gst_memory_unref(c), gst_memory_unref(small);
  assert_int_equal(gst_pp_pinned_allocator_n_spare(allocator), 2);
  gst_pp_pinned_allocator_set_spare(allocator, 1);
  assert_int_equal(gst_pp_pinned_allocator_n_spare(allocator), 1);
  gst_pp_pinned_allocator_set_spare(allocator, 0);
  assert_int_equal(gst_pp_pinned_allocator_n_spare(allocator), 0);

  /* Blocks still kept when the allocator goes are freed with it (the leaks
   * tracer and ASan see it). */
  gst_pp_pinned_allocator_set_spare(allocator, 4);
  gst_memory_unref(filled(allocator, frame, 6));
  assert_int_equal(gst_pp_pinned_allocator_n_spare(allocator), 1);
  gst_object_unref(allocator);
}

int
main(int argc, char **argv)
{
  gst_init(&argc, &argv);
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_spare_blocks),
  };
  return test_gst_run(tests, NULL);
}
