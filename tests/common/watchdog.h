// SPDX-License-Identifier: LGPL-2.1-or-later
/* A watchdog for tests that could hang: past its deadline it prints what
 * every thread of the process is doing (the kernel's wait channel and
 * stack where readable, and a user-space backtrace taken by signalling the
 * thread), then whatever the test's describe callback says, then aborts, so
 * a hang in CI leaves its evidence in the log instead of a timeout. */
#ifndef PP_TEST_WATCHDOG_H
#define PP_TEST_WATCHDOG_H

/* Returns a description of the state under test (g_free'd), or NULL. */
typedef char *(*test_watchdog_describe_fn)(void *data);

void test_watchdog_start(unsigned seconds, test_watchdog_describe_fn describe, void *data);
/* Moves the deadline `seconds` from now, and what describe is called with. */
void test_watchdog_pet(unsigned seconds, void *data);
void test_watchdog_stop(void);

#endif
