// SPDX-License-Identifier: LGPL-2.1-or-later
/* The Chrome trace: spans recorded lock-free and written as trace-event
 * JSON. */
#include "trace.h"

#include <errno.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "error.h"
#include "timing.h"

/* The device's tracks live in a process of their own in the viewer. */
#define HOST_PID 1
#define DEVICE_PID 2

typedef struct {
  const char *name; /* a string literal */
  int64_t start_ns, end_ns, frame;
  int32_t pid, tid;
} span;

struct pp_trace {
  char *path, *process;
  FILE *file; /* created at new, written at close */
  span *spans;
  unsigned capacity;
  unsigned next;     /* atomic: the next free span, may pass capacity */
  unsigned dropped;  /* atomic */
  int64_t origin_ns; /* the trace's time 0 */
};

int
pp_trace_new(const char *path, const char *process, unsigned capacity, pp_trace **out, char **msg)
{
  FILE *file = g_fopen(path, "w");
  if (!file)
    return pp_error(msg, errno, "cannot write the trace %s: %s", path, g_strerror(errno));
  pp_trace *t = g_new0(pp_trace, 1);
  t->file = file;
  t->path = g_strdup(path);
  t->process = g_strdup(process);
  t->capacity = capacity ? capacity : 1;
  t->spans = g_new(span, t->capacity);
  t->origin_ns = pp_now_ns();
  *out = t;
  return 0;
}

static void
record(pp_trace *t, int32_t pid, int32_t tid, const char *name, int64_t start_ns, int64_t end_ns,
       int64_t frame)
{
  if (!t)
    return;
  const unsigned i = __atomic_fetch_add(&t->next, 1, __ATOMIC_RELAXED);
  if (i >= t->capacity) {
    __atomic_fetch_add(&t->dropped, 1, __ATOMIC_RELAXED);
    return;
  }
  t->spans[i] = (span){ name, start_ns, end_ns, frame, pid, tid };
}

/* The calling thread's id, asked of the kernel once per thread: a system
 * call per span would cost several times the span's own recording. */
static int32_t
thread_id(void)
{
  static __thread int32_t tid;
  if (!tid)
    tid = (int32_t) syscall(SYS_gettid);
  return tid;
}

void
pp_trace_host(pp_trace *t, const char *name, int64_t start_ns, int64_t end_ns, int64_t frame)
{
  if (t)
    record(t, HOST_PID, thread_id(), name, start_ns, end_ns, frame);
}

void
pp_trace_device(pp_trace *t, unsigned slot, const char *name, int64_t start_ns, int64_t end_ns,
                int64_t frame)
{
  record(t, DEVICE_PID, (int32_t) slot, name, start_ns, end_ns, frame);
}

static void
write_name(FILE *f, int pid, int tid, const char *what, const char *name, int sort)
{
  fprintf(f,
          ",\n{\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"name\":\"%s\",\"args\":{\"name\":\"%s\"}}"
          ",\n{\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"name\":\"%s_sort_index\","
          "\"args\":{\"sort_index\":%d}}",
          pid, tid, what, name, pid, tid, what, sort);
}

/* "slot N" for the device; the thread's own name (its comm) on the host,
 * read at close, so a thread that has exited by then shows its id. */
static char *
thread_name(int pid, int tid)
{
  if (pid == DEVICE_PID)
    return g_strdup_printf("slot %d", tid);
  g_autofree char *path = g_strdup_printf("/proc/self/task/%d/comm", tid);
  char *comm = NULL;
  if (g_file_get_contents(path, &comm, NULL, NULL)) {
    g_strstrip(comm);
    char *named = g_strdup_printf("%s (%d)", comm, tid);
    g_free(comm);
    return named;
  }
  return g_strdup_printf("thread %d", tid);
}

int
pp_trace_close(pp_trace *t, char **msg)
{
  if (!t)
    return 0;
  const unsigned n = MIN(__atomic_load_n(&t->next, __ATOMIC_ACQUIRE), t->capacity);
  int rc = 0;
  FILE *f = t->file;
  fprintf(f,
          "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"spans\":%u,\"dropped\":%u,"
          "\"origin_ns\":%" G_GINT64_FORMAT "},\n"
          "\"traceEvents\":[\n",
          n, __atomic_load_n(&t->dropped, __ATOMIC_RELAXED), (gint64) t->origin_ns);
  fprintf(f, "{\"ph\":\"M\",\"pid\":%d,\"name\":\"process_name\",\"args\":{\"name\":\"%s\"}}",
          HOST_PID, t->process);
  fprintf(f, ",\n{\"ph\":\"M\",\"pid\":%d,\"name\":\"process_name\",\"args\":{\"name\":\"%s\"}}",
          DEVICE_PID, "device");
  GHashTable *named = g_hash_table_new(NULL, NULL);
  for (unsigned i = 0; i < n; i++) {
    const span *s = &t->spans[i];
    const gpointer key = GINT_TO_POINTER(s->pid * 100000000 + s->tid + 1);
    if (!g_hash_table_contains(named, key)) {
      g_autofree char *name = thread_name(s->pid, s->tid);
      write_name(f, s->pid, s->tid, "thread_name", name, s->pid == DEVICE_PID ? s->tid : 100);
      g_hash_table_add(named, key);
    }
    fprintf(f, ",\n{\"ph\":\"X\",\"pid\":%d,\"tid\":%d,\"name\":\"%s\",\"ts\":%.3f,\"dur\":%.3f",
            s->pid, s->tid, s->name, (s->start_ns - t->origin_ns) / 1000.0,
            (s->end_ns - s->start_ns) / 1000.0);
    if (s->frame >= 0)
      fprintf(f, ",\"args\":{\"frame\":%" G_GINT64_FORMAT "}", s->frame);
    fputc('}', f);
  }
  g_hash_table_destroy(named);
  fputs("\n]}\n", f);
  if (fclose(f) != 0)
    rc = pp_error(msg, errno, "cannot write the trace %s: %s", t->path, g_strerror(errno));
  g_free(t->spans);
  g_free(t->path);
  g_free(t->process);
  g_free(t);
  return rc;
}
