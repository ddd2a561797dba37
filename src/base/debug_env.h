/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The environment variables pingpong reads, all of them, here and nowhere
 * else: process-wide debugging aids, each listed in the README. Everything
 * a pipeline may want to choose is an element property instead. */
#ifndef PP_DEBUG_ENV_H
#define PP_DEBUG_ENV_H

#include <stdint.h>

typedef struct {
  /* PINGPONG_CUDA_MODULE: the CUDA backend's module to load instead of the
   * one found beside the plugin (NULL: none given). */
  const char *cuda_module;
  /* PINGPONG_TRACE: a Chrome trace of every cudamlp, for elements whose
   * trace-file is unset; "{name}" becomes the element's name. */
  const char *trace;
  /* PINGPONG_TRACE_SPANS: how many spans a trace keeps (0: the default). */
  unsigned trace_spans;
  /* PINGPONG_CPU_FAIL_AT: the CPU backend reports frame N (from 0, since
   * configure) as failed, for tests of the error paths; -1: never. */
  int64_t cpu_fail_at;
} pp_debug_env;

/* The variables as they are now (read on every call: tests set them
 * between pipelines). */
pp_debug_env pp_debug_env_read(void);

#endif
