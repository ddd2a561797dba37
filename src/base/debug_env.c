/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The debugging environment variables, read in this one place. */
#include <glib.h>

#include "debug_env.h"

static const char *
nonempty(const char *name)
{
  const char *value = g_getenv(name);
  return value && *value ? value : NULL;
}

pp_debug_env
pp_debug_env_read(void)
{
  pp_debug_env env = { .cpu_fail_at = -1 };
  env.cuda_module = nonempty("PINGPONG_CUDA_MODULE");
  env.trace = nonempty("PINGPONG_TRACE");
  guint64 n = 0;
  const char *spans = nonempty("PINGPONG_TRACE_SPANS");
  if (spans && g_ascii_string_to_unsigned(spans, 10, 1, 1u << 26, &n, NULL))
    env.trace_spans = (unsigned) n;
  const char *fail_at = nonempty("PINGPONG_CPU_FAIL_AT");
  if (fail_at && g_ascii_string_to_unsigned(fail_at, 10, 0, G_MAXINT64, &n, NULL))
    env.cpu_fail_at = (int64_t) n;
  return env;
}
