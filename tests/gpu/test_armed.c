/* Frames handed to their kernel queued ahead (pp_backend_ops.arm,
 * src/cuda/armed.c): the `small` kernel held back by its stream's wait on
 * the doorbell must read the frame rung in, whenever it comes, and write
 * its result where the submit said, against the float64 reference; every
 * way an arm ends (rung, disarmed at once or later, cancelled by
 * teardown) leaves correct results and a usable slot. Exits 77 without a
 * device. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <glib.h>
#include <stdlib.h>
#include <string.h>

#include "backend_run.h"
#include "testutil.h"

/* Slot the engine gives frame `seq` (pp_engine_acquire): seq mod slots. */
static unsigned
slot_of(int seq, unsigned slots)
{
  return (unsigned) seq % slots;
}

static uint64_t
armed_inputs(run *r)
{
  pp_stats stats;
  pp_engine_get_stats(r->engine, &stats);
  return stats.armed_inputs;
}

/* `arm`: whether paced frames may be armed (PINGPONG_CUDA_ARM). */
static void
setup_armed(run *r, bool arm, pp_completion completion, bool pinned, unsigned slots)
{
  g_setenv("PINGPONG_CUDA_ZERO_COPY", "1", TRUE);
  g_setenv("PINGPONG_CUDA_ARM", arm ? "1" : "0", TRUE);
  setup_run(r, &shapes[0], "small", completion, true, pinned, slots);
  g_unsetenv("PINGPONG_CUDA_ZERO_COPY");
  g_unsetenv("PINGPONG_CUDA_ARM");
  const bool armable = arm && completion != PP_COMPLETION_HOST_FUNC;
  if (armable != (strstr(pp_engine_backend_detail(r->engine), "armed") != NULL))
    fail_msg("arm %d: %s", arm, pp_engine_backend_detail(r->engine));
}

/* Each frame armed for, then rung in after 0-400 µs (the kernel waiting
 * or not yet queued on the GPU), one at a time as a paced stream's are. */
static void
test_armed_frames(void **state)
{
  (void) state;
  static const pp_completion modes[] = { PP_COMPLETION_CONSUMER, PP_COMPLETION_EVENT_THREAD };
  test_rng rng;
  test_rng_seed(&rng, seed);
  for (int mode = 0; mode < 2; mode++)
    for (unsigned slots = 1; slots <= 2; slots++)
      for (int pinned = 0; pinned < 2; pinned++) {
        run r;
        setup_armed(&r, true, modes[mode], pinned, slots);
        for (int i = 0; i < FRAMES; i++) {
          assert_int_equal(r.backend->ops->arm(r.backend, slot_of(i, slots)), 0);
          g_usleep(test_rng_next(&rng) % 400);
          submit(&r, i);
          pop(&r, i);
        }
        g_autofree char *what =
            g_strdup_printf("armed, %s, slots=%u, %s", mode ? "event-thread" : "consumer", slots,
                            pinned ? "pinned" : "pageable");
        check_outputs(&r, what);
        assert_int_equal(armed_inputs(&r), FRAMES);
        print_message("ok: %s\n", what);
        teardown_run(&r);
      }
}

/* Arms that end without their frame: disarmed at once or after the
 * kernel waited (the frame then comes and runs the usual way), armed
 * twice (one arm), one left for teardown to cancel. */
static void
test_arm_ends(void **state)
{
  (void) state;
  run r;
  setup_armed(&r, true, PP_COMPLETION_CONSUMER, true, 2);
  pp_backend *b = r.backend;
  for (int i = 0; i < 4; i++) {
    assert_int_equal(b->ops->arm(b, slot_of(i, 2)), 0);
    if (i >= 2)
      g_usleep(200);
    b->ops->disarm(b, slot_of(i, 2));
    b->ops->disarm(b, slot_of(i, 2)); /* a second does nothing */
    submit(&r, i);
    pop(&r, i);
  }
  assert_int_equal(armed_inputs(&r), 0);

  assert_int_equal(b->ops->arm(b, 0), 0);
  assert_int_equal(b->ops->arm(b, 0), 0);
  submit(&r, 4);
  pop(&r, 4);
  assert_int_equal(armed_inputs(&r), 1);
  for (int i = 5; i < FRAMES; i++) {
    submit(&r, i);
    pop(&r, i);
  }
  check_outputs(&r, "after disarms and a double arm");
  assert_int_equal(b->ops->arm(b, 1), 0); /* left armed: teardown cancels it */
  teardown_run(&r);
}

static int
compare_doubles(const void *a, const void *b)
{
  const double x = *(const double *) a, y = *(const double *) b;
  return (x > y) - (x < y);
}

/* Not a check: what submit to pop takes with the frame's kernel armed
 * 200 µs before and without, printed for the record (benchmarks measure;
 * docs/PERFORMANCE.md). */
static void
test_armed_latency(void **state)
{
  (void) state;
  enum { N = 40 };
  for (int armed = 1; armed >= 0; armed--) {
    run r;
    setup_armed(&r, armed, PP_COMPLETION_CONSUMER, true, 1);
    double us[N];
    for (int i = 0; i < N; i++) {
      if (armed)
        assert_int_equal(r.backend->ops->arm(r.backend, 0), 0);
      g_usleep(200);
      const int64_t start = pp_now_ns();
      submit(&r, i % FRAMES);
      pop(&r, i % FRAMES);
      us[i] = (pp_now_ns() - start) / 1000.0;
    }
    qsort(us, N, sizeof *us, compare_doubles);
    print_message("%s: submit to pop p50 %.1f µs, p90 %.1f µs\n", armed ? "armed" : "not armed",
                  us[N / 2], us[N * 9 / 10]);
    check_outputs(&r, armed ? "armed" : "not armed");
    teardown_run(&r);
  }
}

/* Where frames are not read in place by `small`, or a host function
 * reports them, nothing is armed, and PINGPONG_CUDA_ARM=0 turns it off. */
static void
test_arm_refused(void **state)
{
  (void) state;
  run r;
  setup_run(&r, &shapes[0], "fused", PP_COMPLETION_CONSUMER, true, true, 1);
  assert_int_equal(r.backend->ops->arm(r.backend, 0), -ENOTSUP);
  teardown_run(&r);
  setup_armed(&r, true, PP_COMPLETION_HOST_FUNC, true, 1);
  assert_int_equal(r.backend->ops->arm(r.backend, 0), -ENOTSUP);
  teardown_run(&r);
  setup_armed(&r, false, PP_COMPLETION_CONSUMER, true, 1);
  assert_int_equal(r.backend->ops->arm(r.backend, 0), -ENOTSUP);
  teardown_run(&r);
  setup_armed(&r, true, PP_COMPLETION_CONSUMER, true, 1);
  assert_int_equal(r.backend->ops->arm(r.backend, 1), -ENOTSUP); /* no such slot */
  assert_int_equal(r.backend->ops->arm(r.backend, 0), 0);
  teardown_run(&r); /* cancels it */
}

int
main(void)
{
  if (!test_cuda_usable())
    return 77;
  seed = test_seed();
  quick = g_getenv("PP_GPU_QUICK") != NULL;
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_armed_frames),
    cmocka_unit_test(test_arm_ends),
    cmocka_unit_test(test_arm_refused),
    cmocka_unit_test(test_armed_latency),
  };
  const char *filter = g_getenv("PP_TEST_FILTER"); /* racecheck takes the slow ones apart */
  if (filter && *filter)
    cmocka_set_test_filter(filter);
  return cmocka_run_group_tests(tests, NULL, NULL);
}
