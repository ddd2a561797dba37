// SPDX-License-Identifier: LGPL-2.1-or-later
/* The tests' watchdog: every thread's state printed before a hang aborts. */
#include "watchdog.h"

#include <dirent.h>
#include <execinfo.h>
#include <glib.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static GMutex lock;
static GCond changed;
static GThread *thread;
static gint64 deadline;
static bool stopping;
static test_watchdog_describe_fn describe;
static void *describe_data;
static volatile sig_atomic_t dumped;

static void
on_dump_signal(int sig)
{
  (void) sig;
  void *frames[64];
  char header[64];
  const int n = backtrace(frames, 64);
  const int len = snprintf(header, sizeof header, "-- thread %ld:\n", (long) syscall(SYS_gettid));
  write(STDERR_FILENO, header, len);
  backtrace_symbols_fd(frames, n, STDERR_FILENO);
  dumped = dumped + 1;
}

static void
print_file(const char *label, const char *path)
{
  g_autofree char *text = NULL;
  if (g_file_get_contents(path, &text, NULL, NULL))
    fprintf(stderr, "%s: %s%s", label, text, g_str_has_suffix(text, "\n") ? "" : "\n");
}

static void
dump_threads(void)
{
  DIR *tasks = opendir("/proc/self/task");
  struct dirent *entry;
  const pid_t self = (pid_t) syscall(SYS_gettid);
  while (tasks && (entry = readdir(tasks))) {
    const pid_t tid = (pid_t) atoi(entry->d_name);
    if (tid <= 0)
      continue;
    g_autofree char *base = g_strdup_printf("/proc/self/task/%d", tid);
    g_autofree char *comm = g_build_filename(base, "comm", NULL);
    g_autofree char *wchan = g_build_filename(base, "wchan", NULL);
    g_autofree char *stack = g_build_filename(base, "stack", NULL);
    fprintf(stderr, "== thread %d%s\n", tid, tid == self ? " (the watchdog)" : "");
    print_file("comm", comm);
    print_file("wchan", wchan);
    print_file("kernel stack", stack);
    fflush(stderr);
    if (tid == self)
      continue;
    const int before = dumped;
    syscall(SYS_tgkill, getpid(), tid, SIGUSR2);
    for (int i = 0; i < 100 && dumped == before; i++)
      g_usleep(10000);
  }
  if (tasks)
    closedir(tasks);
}

static gpointer
watch(gpointer unused)
{
  (void) unused;
  g_mutex_lock(&lock);
  while (!stopping) {
    if (g_cond_wait_until(&changed, &lock, deadline) || g_get_monotonic_time() < deadline)
      continue;
    fprintf(stderr, "\n==== watchdog: the test passed its deadline; what every thread does:\n");
    dump_threads();
    char *state = describe ? describe(describe_data) : NULL;
    if (state)
      fprintf(stderr, "==== state under test:\n%s\n", state);
    g_free(state);
    fflush(stderr);
    abort();
  }
  g_mutex_unlock(&lock);
  return NULL;
}

void
test_watchdog_start(unsigned seconds, test_watchdog_describe_fn fn, void *data)
{
  void *warm[1];
  backtrace(warm, 1); /* loads libgcc now, not inside the signal handler */
  struct sigaction action = { .sa_handler = on_dump_signal, .sa_flags = SA_RESTART };
  sigaction(SIGUSR2, &action, NULL);
  g_mutex_lock(&lock);
  describe = fn;
  describe_data = data;
  deadline = g_get_monotonic_time() + (gint64) seconds * G_TIME_SPAN_SECOND;
  stopping = false;
  g_mutex_unlock(&lock);
  thread = g_thread_new("test-watchdog", watch, NULL);
}

void
test_watchdog_pet(unsigned seconds, void *data)
{
  g_mutex_lock(&lock);
  deadline = g_get_monotonic_time() + (gint64) seconds * G_TIME_SPAN_SECOND;
  describe_data = data;
  g_cond_signal(&changed);
  g_mutex_unlock(&lock);
}

void
test_watchdog_stop(void)
{
  g_mutex_lock(&lock);
  stopping = true;
  g_cond_signal(&changed);
  g_mutex_unlock(&lock);
  g_thread_join(thread);
  thread = NULL;
}
