/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The cuBLASLt module (lt_table.h), opened the first time a plan needs it. */
#ifndef PP_CUDA_LT_LOADER_H
#define PP_CUDA_LT_LOADER_H

#include "lt_table.h"

/* The module's table, loading it on the first call (from beside this
 * module); NULL with a message if it cannot be loaded. *load_ms (may be
 * NULL) is what this call spent loading: 0 once it is loaded. */
const pp_lt_table *pp_lt_get(double *load_ms, char **msg);

/* "cublasLt 130100 failed: …" for a status of a call through the table. */
int pp_lt_fail(char **msg, const char *what, int status, const char *file, int line);

#define LT_CHECK(call)                                                                             \
  do {                                                                                             \
    const int status_ = (call);                                                                    \
    if (status_ != 0)                                                                              \
      return pp_lt_fail(msg, #call, status_, __FILE__, __LINE__);                                  \
  } while (0)

#endif
