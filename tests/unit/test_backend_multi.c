// SPDX-License-Identifier: LGPL-2.1-or-later
/* One backend spread over several (device-id="0,1"): slot i goes to part
 * i mod n as its slot i / n, results come out in submission order whatever
 * order the parts finish in, errors come out with their frame, and the
 * device list parses as the property documents. The CPU backend's results
 * when spread are checked in test_engine (check_cpu_backend). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <glib.h>
#include <math.h>
#include <string.h>

#include "engine.h"
#include "fake_backend.h"
#include "frame.h"
#include "testutil.h"

static uint64_t seed;

typedef struct {
  pp_engine *engine;
  fake_backend *parts[PP_MAX_DEVICES];
  unsigned n_parts, slots;
  fake_frames frames;
} spread_rig;

static void
rig_open(spread_rig *r, unsigned n_parts, unsigned slots, bool hold)
{
  memset(r, 0, sizeof *r);
  pp_backend *parts[PP_MAX_DEVICES];
  int labels[PP_MAX_DEVICES];
  for (unsigned i = 0; i < n_parts; i++) {
    /* Each part its own random completion order. */
    r->parts[i] = fake_new(hold, seed + i);
    parts[i] = &r->parts[i]->base;
    labels[i] = (int) (10 + i);
  }
  r->n_parts = n_parts;
  r->slots = slots;
  pp_backend *multi = NULL;
  char *msg = NULL;
  assert_int_equal(pp_backend_multi_new(parts, labels, n_parts, &multi, &msg), 0);
  assert_string_equal(multi->ops->name, "fake");
  r->engine = pp_engine_new(multi, NULL, NULL);
  pp_frame_layout layout;
  pp_model model = { .k = 1, .o = 1, .n_layers = 1, .layers = { { .in = 1, .out = 1 } } };
  assert_int_equal(pp_layout_for_tensor(1, 1, &layout, &msg), 0);
  assert_int_equal(pp_engine_configure(r->engine, &model, &layout, slots, NULL, &msg), 0);
}

static int
submit(spread_rig *r, unsigned seq)
{
  return fake_submit_frame(r->engine, &r->frames, seq);
}

static void
expect(spread_rig *r, unsigned seq, int status)
{
  fake_expect_frame(r->engine, &r->frames, seq, status);
}

typedef struct {
  spread_rig *r;
  unsigned frames;
} producer_args;

static gpointer
producer(gpointer data)
{
  producer_args *a = data;
  for (unsigned seq = 0; seq < a->frames; seq++)
    assert_int_equal(submit(a->r, seq), 0);
  return NULL;
}

static void
test_order_and_routing(void **state)
{
  (void) state;
  const unsigned cases[][2] = { { 2, 2 }, { 2, 3 }, { 3, 4 }, { 3, 7 }, { 4, 16 } };
  for (size_t c = 0; c < G_N_ELEMENTS(cases); c++) {
    spread_rig r;
    rig_open(&r, cases[c][0], cases[c][1], false);
    producer_args args = { &r, 300 };
    GThread *t = g_thread_new("producer", producer, &args);
    for (unsigned seq = 0; seq < args.frames; seq++)
      expect(&r, seq, 0);
    g_thread_join(t);
    /* Frame seq took engine slot seq mod slots: part (seq mod slots) mod n,
     * as that part's slot (seq mod slots) / n; each part saw its frames in
     * order. */
    unsigned seen[PP_MAX_DEVICES] = { 0 };
    for (unsigned seq = 0; seq < args.frames; seq++) {
      const unsigned slot = seq % r.slots, part = slot % r.n_parts;
      fake_backend *f = r.parts[part];
      assert_true(seen[part] < f->inputs->len);
      assert_float_equal(g_array_index(f->inputs, float, seen[part]), (float) seq, 0);
      assert_int_equal(g_array_index(f->slots, unsigned, seen[part]), slot / r.n_parts);
      seen[part]++;
    }
    for (unsigned p = 0; p < r.n_parts; p++)
      assert_int_equal(seen[p], r.parts[p]->inputs->len);
    pp_slot_stats shares[PP_MAX_SLOTS];
    pp_engine_get_slot_stats(r.engine, shares);
    uint64_t total = 0;
    for (unsigned s = 0; s < r.slots; s++)
      total += shares[s].frames;
    assert_int_equal(total, args.frames);
    pp_engine_free(r.engine);
  }
}

static void
test_failures_come_out_in_order(void **state)
{
  (void) state;
  spread_rig r;
  rig_open(&r, 2, 4, true);
  /* The second part refuses its first submit and fails its next frame. */
  g_mutex_lock(&r.parts[1]->lock);
  r.parts[1]->fail_submits = 1;
  r.parts[1]->fail_completion = 1;
  g_mutex_unlock(&r.parts[1]->lock);
  assert_int_equal(submit(&r, 0), 0);
  /* Frame 1 goes to part 1, which refuses: the engine takes it back. */
  assert_int_equal(submit(&r, 1), -EIO);
  assert_int_equal(submit(&r, 1), 0);
  assert_int_equal(submit(&r, 2), 0);
  fake_set_hold(r.parts[0], false);
  fake_set_hold(r.parts[1], false);
  expect(&r, 0, 0);
  expect(&r, 1, -EIO);
  expect(&r, 2, 0);
  pp_engine_free(r.engine);
}

static void
test_too_few_slots(void **state)
{
  (void) state;
  pp_backend *parts[3], *multi = NULL;
  const int labels[3] = { 0, 1, 2 };
  for (int i = 0; i < 3; i++)
    parts[i] = &fake_new(false, seed)->base;
  char *msg = NULL;
  assert_int_equal(pp_backend_multi_new(parts, labels, 3, &multi, &msg), 0);
  pp_frame_layout layout;
  pp_model model = { .k = 1, .o = 1, .n_layers = 1, .layers = { { .in = 1, .out = 1 } } };
  assert_int_equal(pp_layout_for_tensor(1, 1, &layout, &msg), 0);
  assert_int_equal(multi->ops->configure(multi, &model, &layout, 2, NULL, &msg), -EINVAL);
  assert_non_null(strstr(msg, "set slots to at least 3"));
  g_clear_pointer(&msg, g_free);
  multi->ops->destroy(multi);
}

static void
expect_devices(const char *text, unsigned n, const int *ids, bool all)
{
  pp_backend_options o = { 0 };
  char *msg = NULL;
  assert_int_equal(pp_backend_parse_devices(text, &o, &msg), 0);
  assert_int_equal(o.all_devices, all);
  assert_int_equal(o.n_devices, n);
  for (unsigned i = 0; i < n; i++)
    assert_int_equal(o.devices[i], ids[i]);
  if (n)
    assert_int_equal(o.device_id, ids[0]);
  g_autofree char *back = pp_backend_format_devices(&o);
  pp_backend_options again = { 0 };
  assert_int_equal(pp_backend_parse_devices(back, &again, &msg), 0);
  assert_memory_equal(&again, &o, sizeof o);
}

static void
test_device_lists(void **state)
{
  (void) state;
  expect_devices("0", 1, (int[]){ 0 }, false);
  expect_devices("3", 1, (int[]){ 3 }, false);
  expect_devices("1,0,3", 3, (int[]){ 1, 0, 3 }, false);
  expect_devices(" 2 , 5 ", 2, (int[]){ 2, 5 }, false);
  expect_devices("-1", 0, NULL, true);
  const char *bad[] = { "",     "x",  "0,",  "0,0",
                        "-1,0", "-2", "1.5", "0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16" };
  for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
    pp_backend_options o = { .device_id = 7 };
    char *msg = NULL;
    assert_int_equal(pp_backend_parse_devices(bad[i], &o, &msg), -EINVAL);
    assert_non_null(strstr(msg, "device-id"));
    assert_int_equal(o.device_id, 7);
    g_clear_pointer(&msg, g_free);
  }
  /* Every visible device, on the CPU: one. Slots map round-robin. */
  pp_backend_options o = { .kind = PP_BACKEND_CPU, .all_devices = true };
  pp_backend_resolve_devices(&o);
  assert_int_equal(o.n_devices, 1);
  assert_int_equal(pp_backend_slot_device(&o, 5), 0);
  pp_backend_options list = { .n_devices = 3, .devices = { 4, 2, 9 } };
  const int expected[] = { 4, 2, 9, 4, 2, 9, 4 };
  for (unsigned s = 0; s < G_N_ELEMENTS(expected); s++)
    assert_int_equal(pp_backend_slot_device(&list, s), expected[s]);
}

/* A plan line of several devices comes apart into each device's line; a
 * single device's line is its only part. */
static void
test_plan_parts(void **state)
{
  (void) state;
  const char *joined = "kernels=fused frames=whole | kernels=own+rowdot frames=chunks:2";
  g_autofree char *first = pp_backend_plan_part(joined, 0);
  g_autofree char *second = pp_backend_plan_part(joined, 1);
  assert_string_equal(first, "kernels=fused frames=whole");
  assert_string_equal(second, "kernels=own+rowdot frames=chunks:2");
  assert_null(pp_backend_plan_part(joined, 2));
  g_autofree char *single = pp_backend_plan_part("cpu", 0);
  assert_string_equal(single, "cpu");
  assert_null(pp_backend_plan_part("cpu", 1));
}

int
main(void)
{
  seed = test_seed();
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_order_and_routing), cmocka_unit_test(test_failures_come_out_in_order),
    cmocka_unit_test(test_too_few_slots),     cmocka_unit_test(test_device_lists),
    cmocka_unit_test(test_plan_parts),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
