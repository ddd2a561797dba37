// SPDX-License-Identifier: LGPL-2.1-or-later
/* When the next paced frame is due (src/engine/arrivals.c): only a steady pace
 * within 0.2-100 ms gives a time, and it is the last arrival plus the
 * pace; jitter, a break in the pace, and paces out of range give none. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdint.h>

#include "arrivals.h"

#define MS 1000000LL

/* Notes `n` arrivals from `*t`, `interval` apart, and leaves *t at the last. */
static void
arrive(pp_arrivals *a, int64_t *t, int n, int64_t interval)
{
  for (int i = 0; i < n; i++) {
    *t += interval;
    pp_arrivals_note(a, *t);
  }
}

static void
test_steady_pace(void **state)
{
  (void) state;
  pp_arrivals a = { 0 };
  int64_t t = 5 * MS;
  assert_int_equal(pp_arrivals_next_due(&a), 0);
  arrive(&a, &t, 5, MS); /* the first sets no interval, four more are not yet a pace */
  assert_int_equal(pp_arrivals_next_due(&a), 0);
  arrive(&a, &t, 1, MS);
  assert_int_equal(pp_arrivals_next_due(&a), t + MS);
  /* Small jitter keeps it; the due time follows the mean. */
  arrive(&a, &t, 1, MS + 50000);
  const int64_t due = pp_arrivals_next_due(&a);
  assert_true(due > t + MS && due < t + MS + 50000);
}

static void
test_broken_pace(void **state)
{
  (void) state;
  pp_arrivals a = { 0 };
  int64_t t = 0;
  arrive(&a, &t, 10, 2 * MS);
  assert_int_not_equal(pp_arrivals_next_due(&a), 0);
  /* One frame 3× late breaks the pace until four steady intervals again. */
  arrive(&a, &t, 1, 6 * MS);
  assert_int_equal(pp_arrivals_next_due(&a), 0);
  arrive(&a, &t, 3, 2 * MS);
  assert_int_equal(pp_arrivals_next_due(&a), 0);
  arrive(&a, &t, 4, 2 * MS);
  assert_int_not_equal(pp_arrivals_next_due(&a), 0);
  /* Intervals alternating 1 and 3 ms are no pace. */
  pp_arrivals b = { 0 };
  t = 0;
  for (int i = 0; i < 20; i++)
    arrive(&b, &t, 1, i % 2 ? 3 * MS : MS);
  assert_int_equal(pp_arrivals_next_due(&b), 0);
}

static void
test_paces_out_of_range(void **state)
{
  (void) state;
  pp_arrivals fast = { 0 }, slow = { 0 }, edge = { 0 };
  int64_t t = 0;
  arrive(&fast, &t, 20, 100000); /* 10 kHz: the consumer is rarely idle */
  assert_int_equal(pp_arrivals_next_due(&fast), 0);
  t = 0;
  arrive(&slow, &t, 20, 200 * MS); /* 5 Hz: a wake-up is little of a frame's life */
  assert_int_equal(pp_arrivals_next_due(&slow), 0);
  t = 0;
  arrive(&edge, &t, 20, 33 * MS); /* 30 fps */
  assert_int_equal(pp_arrivals_next_due(&edge), t + 33 * MS);
}

int
main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_steady_pace),
    cmocka_unit_test(test_broken_pace),
    cmocka_unit_test(test_paces_out_of_range),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
