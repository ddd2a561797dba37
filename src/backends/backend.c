/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Picks and opens a backend, and allocates the host memory frames live in. */
#include "backend.h"

#include <errno.h>
#include <glib.h>

#include "cuda_host.h"
#include "host_memory.h"

bool
pp_backend_have_cuda(void)
{
#ifdef PP_HAVE_CUDA
  return true;
#else
  return false;
#endif
}

/* One backend of opts->kind on opts->device_id. */
static int
open_one(const pp_backend_options *opts, pp_backend **out, char **note, char **msg)
{
  switch (opts->kind) {
    case PP_BACKEND_CPU:
      return pp_backend_cpu_new(opts, out, msg);
    case PP_BACKEND_CUDA:
      return pp_backend_cuda_new(opts, out, msg);
    case PP_BACKEND_AUTO:
    default: {
      char *why = NULL;
      int rc = pp_backend_cuda_new(opts, out, &why);
      if (rc < 0) {
        if (note)
          *note = g_strdup_printf("no usable CUDA device (%s); running on the CPU backend", why);
        g_free(why);
        rc = pp_backend_cpu_new(opts, out, msg);
      }
      return rc;
    }
  }
}

/* One backend per device, all of one kind: AUTO decides on the first
 * device, so a machine never mixes GPUs and CPUs. */
static int
open_spread(const pp_backend_options *opts, pp_backend **out, char **note, char **msg)
{
  pp_backend *parts[PP_MAX_DEVICES];
  pp_backend_options one = *opts;
  one.n_devices = 0;
  one.all_devices = false;
  for (unsigned i = 0; i < opts->n_devices; i++) {
    one.device_id = opts->devices[i];
    int rc = open_one(&one, &parts[i], i == 0 ? note : NULL, msg);
    if (rc == 0 && i == 0 && opts->kind == PP_BACKEND_AUTO)
      one.kind = g_str_equal(parts[0]->ops->name, "cuda") ? PP_BACKEND_CUDA : PP_BACKEND_CPU;
    if (rc < 0) {
      for (unsigned j = 0; j < i; j++)
        parts[j]->ops->destroy(parts[j]);
      return rc;
    }
  }
  return pp_backend_multi_new(parts, opts->devices, opts->n_devices, out, msg);
}

int
pp_backend_open(const pp_backend_options *opts, pp_complete_fn complete, void *data,
                pp_backend **out, char **note, char **msg)
{
  pp_backend_options resolved = *opts;
  pp_backend_resolve_devices(&resolved);
  pp_backend *b = NULL;
  const int rc = resolved.n_devices > 1 ? open_spread(&resolved, &b, note, msg)
                                        : open_one(&resolved, &b, note, msg);
  if (rc < 0)
    return rc;
  b->complete = complete;
  b->complete_data = data;
  *out = b;
  return 0;
}

int
pp_backend_parse_devices(const char *text, pp_backend_options *opts, char **msg)
{
  g_auto(GStrv) items = g_strsplit(text ? text : "", ",", -1);
  const unsigned n = g_strv_length(items);
  int devices[PP_MAX_DEVICES];
  bool all = false;
  for (unsigned i = 0; i < n; i++) {
    const char *item = g_strstrip(items[i]);
    gint64 value;
    if (!g_ascii_string_to_signed(item, 10, -1, G_MAXINT, &value, NULL) || (value == -1 && n > 1) ||
        i >= PP_MAX_DEVICES) {
      *msg = g_strdup_printf("device-id \"%s\": give a device number (\"0\"), a list of up to %d "
                             "(\"0,1\") or -1 for every visible device",
                             text ? text : "", PP_MAX_DEVICES);
      return -EINVAL;
    }
    for (unsigned j = 0; j < i; j++)
      if (devices[j] == value) {
        *msg = g_strdup_printf("device-id \"%s\" names device %d twice", text, devices[j]);
        return -EINVAL;
      }
    devices[i] = (int) value;
    all = value == -1;
  }
  if (n == 0) {
    *msg = g_strdup("device-id is empty: give a device number, a list or -1");
    return -EINVAL;
  }
  opts->all_devices = all;
  opts->n_devices = all ? 0 : n;
  opts->device_id = all ? 0 : devices[0];
  for (unsigned i = 0; i < opts->n_devices; i++)
    opts->devices[i] = devices[i];
  return 0;
}

char *
pp_backend_format_devices(const pp_backend_options *opts)
{
  if (opts->all_devices)
    return g_strdup("-1");
  if (opts->n_devices == 0)
    return g_strdup_printf("%d", opts->device_id);
  GString *s = g_string_new(NULL);
  for (unsigned i = 0; i < opts->n_devices; i++)
    g_string_append_printf(s, i ? ",%d" : "%d", opts->devices[i]);
  return g_string_free(s, FALSE);
}

void
pp_backend_resolve_devices(pp_backend_options *opts)
{
  if (!opts->all_devices)
    return;
  const int count = opts->kind == PP_BACKEND_CPU ? 0 : pp_backend_count_devices();
  opts->all_devices = false;
  opts->n_devices = (unsigned) CLAMP(count, 1, PP_MAX_DEVICES);
  for (unsigned i = 0; i < opts->n_devices; i++)
    opts->devices[i] = (int) i;
  opts->device_id = 0;
}

int
pp_backend_slot_device(const pp_backend_options *opts, unsigned slot)
{
  return opts->n_devices > 1 ? opts->devices[slot % opts->n_devices] : opts->device_id;
}

void *
pp_host_alloc(size_t size, bool pinned, char **msg)
{
  void *ptr = pp_host_map(size, msg);
  if (ptr && pinned && pp_cuda_host_register(ptr, pp_host_mapped_bytes(size), msg) < 0) {
    pp_host_unmap(ptr, size);
    return NULL;
  }
  return ptr;
}

void
pp_host_free(void *ptr, size_t size, bool pinned)
{
  if (!ptr)
    return;
  if (pinned)
    pp_cuda_host_unregister(ptr);
  pp_host_unmap(ptr, size);
}

/* The consumer waiting for its frames itself saves one thread waking
 * another on every frame; docs/PERFORMANCE.md ("Completion") compares it
 * with the event thread. */
pp_completion
pp_completion_resolve(pp_completion completion)
{
  return completion == PP_COMPLETION_AUTO ? PP_COMPLETION_CONSUMER : completion;
}

const char *
pp_plan_source_name(pp_plan_source source)
{
  switch (source) {
    case PP_PLAN_CACHED:
      return "cached";
    case PP_PLAN_FORCED:
      return "forced";
    default:
      return "tuned";
  }
}
