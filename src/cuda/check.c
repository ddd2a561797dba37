/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* CUDA errors turned into -EIO and a message naming the call. */
#include "check.h"

#include <errno.h>
#include <glib.h>
#include <string.h>

int
pp_cuda_fail_text(char **msg, const char *what, const char *why, const char *file, int line)
{
  const char *base = strrchr(file, '/');
  if (msg && !*msg)
    *msg = g_strdup_printf("%s failed: %s [%s:%d]", what, why, base ? base + 1 : file, line);
  return -EIO;
}

int
pp_cuda_fail(char **msg, const char *what, cudaError_t err, const char *file, int line)
{
  g_autofree char *why = g_strdup_printf("%s (%s)", cudaGetErrorString(err), cudaGetErrorName(err));
  return pp_cuda_fail_text(msg, what, why, file, line);
}
