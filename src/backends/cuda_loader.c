/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Finds and opens the CUDA module (cuda_module.h), and forwards the CUDA
 * calls the rest of the core makes to it. */
#include <dlfcn.h>
#include <errno.h>
#include <glib.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_host.h"
#include "cuda_module.h"
#include "debug_env.h"
#include "module_table.h"

#ifdef PP_HAVE_CUDA
/* Where the module is looked for, first match wins:
 *   $PINGPONG_CUDA_MODULE, a path to the file;
 *   in the build tree (PP_CUDA_MODULE_BUILT), when the code asking is in it
 *     (the plugin, the tools and the tests as built, not installed);
 *   beside the plugin once installed: <libdir>/gstreamer-1.0/../pingpong/;
 *   the directory it was installed to (PP_CUDA_MODULE_DIR), for programs
 *     in <bindir>. */
/* The file this code was loaded from, absolute: the plugin, or the program
 * the core is linked into (dladdr names that one as it was started). */
static char *
self_path(void)
{
  Dl_info self = { 0 };
  char *path = NULL;
  if (dladdr((void *) self_path, &self) && self.dli_fname && *self.dli_fname)
    path = realpath(self.dli_fname, NULL);
  if (!path)
    path = g_file_read_link("/proc/self/exe", NULL);
  return path;
}

static GPtrArray *
candidate_paths(void)
{
  GPtrArray *paths = g_ptr_array_new_with_free_func(g_free);
  const char *forced = pp_debug_env_read().cuda_module;
  if (forced) {
    g_ptr_array_add(paths, g_strdup(forced));
    return paths;
  }
  /* realpath() allocates with malloc; GLib's g_free is free() since 2.46. */
  g_autofree char *self = self_path();
  if (self && g_str_has_prefix(self, PP_BUILD_ROOT "/")) {
    g_ptr_array_add(paths, g_strdup(PP_CUDA_MODULE_BUILT));
    return paths;
  }
  if (self) {
    g_autofree char *dir = g_path_get_dirname(self);
    g_ptr_array_add(paths, g_build_filename(dir, "..", "pingpong", PP_CUDA_MODULE_NAME, NULL));
  }
  g_ptr_array_add(paths, g_build_filename(PP_CUDA_MODULE_DIR, PP_CUDA_MODULE_NAME, NULL));
  return paths;
}

static const pp_cuda_module *
open_module(char **msg)
{
  g_autoptr(GPtrArray) paths = candidate_paths();
  const char *path = NULL;
  for (unsigned i = 0; i < paths->len && !path; i++)
    if (g_file_test(paths->pdata[i], G_FILE_TEST_EXISTS))
      path = paths->pdata[i];
  const char *forced = pp_debug_env_read().cuda_module;
  if (!path && forced) {
    *msg = g_strdup_printf("PINGPONG_CUDA_MODULE names %s, which does not exist", forced);
    return NULL;
  }
  if (!path) {
    g_autofree char *list = NULL;
    g_ptr_array_add(paths, NULL);
    list = g_strjoinv(", ", (char **) paths->pdata);
    *msg = g_strdup_printf("the CUDA backend's module is not installed (looked for %s; "
                           "PINGPONG_CUDA_MODULE may name another)",
                           list);
    return NULL;
  }
  g_autofree char *hint = g_strdup_printf(" (are the CUDA %d runtime and cuBLAS libraries "
                                          "installed and on the loader's path?)",
                                          PP_CUDA_MAJOR);
  const pp_cuda_module *table = pp_module_table(path, PP_CUDA_MODULE_ENTRY, PP_CUDA_MODULE_ABI,
                                                "the CUDA backend", hint, msg);
  if (!table)
    return NULL;
  /* Its messages go where the core's go, whatever handler is set later. */
  table->set_log(pp_log_write, pp_log_enabled);
  return table;
}
#endif

const pp_cuda_module *
pp_cuda_module_get(char **msg)
{
#ifdef PP_HAVE_CUDA
  /* Tried once: the answer does not change while the process runs. */
  static const pp_cuda_module *table;
  static char *failure;
  static gsize done;
  if (g_once_init_enter(&done)) {
    table = open_module(&failure);
    g_once_init_leave(&done, 1);
  }
  if (!table && msg)
    *msg = g_strdup(failure);
  return table;
#else
  if (msg)
    *msg = g_strdup("this build of pingpong has no CUDA backend (nvcc was not found when it was "
                    "built; rebuild with -Dcuda=enabled)");
  return NULL;
#endif
}

int
pp_backend_cuda_new(const pp_backend_options *opts, pp_backend **out, char **msg)
{
  const pp_cuda_module *m = pp_cuda_module_get(msg);
  return m ? m->backend_new(opts, out, msg) : -ENOTSUP;
}

int
pp_backend_count_devices(void)
{
  const pp_cuda_module *m = pp_cuda_module_get(NULL);
  return m ? m->device_count() : 0;
}

int
pp_cuda_host_register(void *ptr, size_t bytes, char **msg)
{
  char *why = NULL;
  const pp_cuda_module *m = pp_cuda_module_get(&why);
  if (!m) {
    *msg = g_strdup_printf("pinned memory needs CUDA: %s", why);
    g_free(why);
    return -ENOTSUP;
  }
  return m->host_register(ptr, bytes, msg);
}

void
pp_cuda_host_unregister(void *ptr)
{
  /* Only memory the module registered comes here, so it is loaded. */
  const pp_cuda_module *m = pp_cuda_module_get(NULL);
  if (m)
    m->host_unregister(ptr);
}

int
pp_cuda_time_stages(pp_backend *b, const void *input, float *output, unsigned reps,
                    pp_cuda_stage_times *out, char **msg)
{
  const pp_cuda_module *m = pp_cuda_module_get(msg);
  return m ? m->time_stages(b, input, output, reps, out, msg) : -ENOTSUP;
}

int
pp_cuda_time_paths(pp_backend *b, unsigned reps, pp_cuda_path_time *out, unsigned max, unsigned *n,
                   char **msg)
{
  const pp_cuda_module *m = pp_cuda_module_get(msg);
  return m ? m->time_paths(b, reps, out, max, n, msg) : -ENOTSUP;
}

int
pp_cuda_primary_context(int device, void **context, char **msg)
{
  const pp_cuda_module *m = pp_cuda_module_get(msg);
  return m ? m->primary_context(device, context, msg) : -ENOTSUP;
}

int
pp_cuda_preload_blas(char **msg)
{
  const pp_cuda_module *m = pp_cuda_module_get(msg);
  return m ? m->preload_blas(msg) : -ENOTSUP;
}
