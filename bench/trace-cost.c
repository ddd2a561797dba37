// SPDX-License-Identifier: LGPL-2.1-or-later
/* What one trace span costs the thread that records it: the two clock
 * reads around the work and the record, a million times.
 *
 *   build/bench/trace-cost
 */
#include <glib.h>
#include <glib/gstdio.h>
#include <stdio.h>

#include "timing.h"
#include "trace.h"

int
main(void)
{
  enum { N = 1000000 };
  g_autofree gchar *path = g_build_filename(g_get_tmp_dir(), "pp-trace-cost.json", NULL);
  pp_trace *t = NULL;
  char *msg = NULL;
  if (pp_trace_new(path, "trace-cost", N, &t, &msg) < 0) {
    fprintf(stderr, "trace-cost: %s\n", msg);
    g_free(msg);
    return 1;
  }
  const int64_t t0 = pp_now_ns();
  for (int i = 0; i < N; i++) {
    const int64_t start = pp_now_ns();
    pp_trace_host(t, "span", start, pp_now_ns(), i);
  }
  const int64_t t1 = pp_now_ns();
  printf("%.1f ns per span (two clock reads and the record), %d spans\n", (double) (t1 - t0) / N,
         N);
  const int rc = pp_trace_close(t, &msg);
  if (rc < 0) {
    fprintf(stderr, "trace-cost: %s\n", msg);
    g_free(msg);
  }
  g_unlink(path);
  return rc < 0;
}
