/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The plan cache: entries keyed, read, checked and written atomically. */
#include "plan_cache.h"

#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "log.h"

/* An entry, three lines: what it is, its key, its plan (or its hint). */
#define ENTRY_HEADER "pingpong plan cache 1"
#define HINT_HEADER "pingpong start hint 1"

static void
append_model(GString *s, const pp_model *m)
{
  for (unsigned i = 0; i < m->n_layers; i++) {
    const pp_layer *l = &m->layers[i];
    g_autofree char *act = pp_act_to_string(l->act);
    g_string_append_printf(s, "%slinear(%u,%u%s),%s", i ? "," : "", l->in, l->out,
                           l->b ? "" : ",nobias", act);
  }
}

static void
append_layout(GString *s, const pp_frame_layout *l)
{
  static const char *const kinds[] = { "rows", "patches", "tensor" };
  g_string_append_printf(s, "%s n=%u k=%u %ux%u ch=%u px=%u stride=%u patch=%u yuv=%d bytes=%zu",
                         kinds[l->kind], l->n, l->k, l->width, l->height, l->channels,
                         l->pixel_stride, l->row_stride, l->patch, l->is_yuv, l->frame_bytes);
  for (uint32_t i = 0; i < l->n_planes; i++)
    g_string_append_printf(s, " plane=%u/%u/%ux%u", l->planes[i].offset, l->planes[i].stride,
                           l->planes[i].row_bytes, l->planes[i].rows);
}

char *
pp_plan_cache_key(const char *backend_key, const pp_model *model, const pp_frame_layout *layout,
                  unsigned n_slots, const char *settings)
{
  GString *s = g_string_new(NULL);
  g_string_append_printf(s, "backend=%s | model=", backend_key);
  append_model(s, model);
  g_string_append(s, " | frames=");
  append_layout(s, layout);
  g_string_append_printf(s, " | slots=%u | %s", n_slots, settings ? settings : "");
  return g_string_free(s, FALSE);
}

static char *
entry_path_with(const char *dir, const char *key, const char *suffix)
{
  g_autofree char *digest = g_compute_checksum_for_string(G_CHECKSUM_SHA256, key, -1);
  digest[32] = '\0';
  g_autofree char *name = g_strdup_printf("%s.%s", digest, suffix);
  return dir ? g_build_filename(dir, name, NULL)
             : g_build_filename(g_get_user_cache_dir(), "pingpong", name, NULL);
}

static char *
entry_path(const char *dir, const char *key)
{
  return entry_path_with(dir, key, "plan");
}

/* The value an entry's text holds for `key`: its header, then "key KEY",
 * then "WHAT VALUE". NULL where it holds none, with *why. */
static char *
entry_value(const char *text, const char *header, const char *key, const char *what,
            const char **why)
{
  g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
  const size_t skip = strlen(what) + 1;
  if (g_strv_length(lines) < 3 || strcmp(lines[0], header) != 0)
    *why = "it is not a whole plan cache entry (truncated or overwritten)";
  else if (!g_str_has_prefix(lines[1], "key ") || strcmp(lines[1] + 4, key) != 0)
    *why = "it was stored for another key (another model, layout, GPU or version)";
  else if (strncmp(lines[2], what, skip - 1) != 0 || lines[2][skip - 1] != ' ' || !lines[2][skip])
    *why = "it holds nothing";
  else
    return g_strdup(lines[2] + skip);
  return NULL;
}

/* The plan line an entry holds for `key`: NULL where there is none (no
 * warning) or where it cannot be used (*warning says why). */
static char *
read_entry(const char *path, const char *key, char **warning)
{
  g_autofree char *text = NULL;
  GError *err = NULL;
  if (!g_file_get_contents(path, &text, NULL, &err)) {
    /* No entry yet, or no directory yet: the first run's, nothing to say. */
    if (!g_error_matches(err, G_FILE_ERROR, G_FILE_ERROR_NOENT) &&
        !g_error_matches(err, G_FILE_ERROR, G_FILE_ERROR_NOTDIR))
      *warning = g_strdup_printf("cannot read the plan cache entry %s: %s", path, err->message);
    g_error_free(err);
    return NULL;
  }
  const char *why = NULL;
  char *line = entry_value(text, ENTRY_HEADER, key, "plan", &why);
  if (!line)
    *warning = g_strdup_printf("the plan cache entry %s is not usable: %s; tuned again", path, why);
  return line;
}

static bool
write_lines(const char *path, const char *header, const char *key, const char *what,
            const char *line, char **warning)
{
  g_autofree char *dir = g_path_get_dirname(path);
  g_autofree char *text = g_strdup_printf("%s\nkey %s\n%s %s\n", header, key, what, line);
  GError *err = NULL;
  if (g_mkdir_with_parents(dir, 0755) < 0) {
    *warning =
        g_strdup_printf("cannot make the plan cache directory %s: %s", dir, g_strerror(errno));
    return false;
  }
  /* Written to a temporary file, then renamed over the entry. */
  if (!g_file_set_contents_full(path, text, -1, G_FILE_SET_CONTENTS_CONSISTENT, 0644, &err)) {
    *warning = g_strdup_printf("cannot write the plan cache entry %s: %s", path, err->message);
    g_error_free(err);
    return false;
  }
  return true;
}

static bool
write_entry(const char *path, const char *key, const char *line, char **warning)
{
  return write_lines(path, ENTRY_HEADER, key, "plan", line, warning);
}

/* Plans are made one at a time: whoever makes one holds the cache
 * directory's lock from reading its entry to writing it. A second element
 * with the same key (of this process or another) then waits and reads the
 * plan the first made, and no element times candidates while another
 * does: on one GPU each would see the other's work in its timings and
 * could keep a slower plan for good. -1 where the lock cannot be had: the
 * plan is made unlocked. */
static int
lock_entry(const char *path)
{
  g_autofree char *dir = g_path_get_dirname(path);
  if (g_mkdir_with_parents(dir, 0755) < 0)
    return -1;
  const int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return -1;
  int rc;
  while ((rc = flock(fd, LOCK_EX)) < 0 && errno == EINTR)
    ;
  if (rc < 0) {
    close(fd);
    return -1;
  }
  return fd;
}

static void
unlock_entry(int fd)
{
  if (fd >= 0)
    close(fd); /* releases the lock */
}

int
pp_plan_configure(pp_engine *e, const pp_model *model, const pp_frame_layout *layout,
                  unsigned n_slots, const pp_plan_settings *s, pp_plan_outcome *out, char **msg)
{
  *out = (pp_plan_outcome){ 0 };
  const char *backend_key = pp_engine_plan_key(e);
  const bool use_cache = backend_key && !s->forced && s->tuning != PP_TUNING_QUICK;
  g_autofree char *key = NULL, *cached = NULL;
  int lock = -1;
  if (use_cache) {
    g_autofree char *settings =
        g_strdup_printf("%s%s", s->settings ? s->settings : "", s->no_graphs ? " graphs=off" : "");
    key = pp_plan_cache_key(backend_key, model, layout, n_slots, settings);
    out->path = entry_path(s->dir, key);
    lock = lock_entry(out->path);
    if (s->tuning == PP_TUNING_CACHED)
      cached = read_entry(out->path, key, &out->warning);
  }
  if (s->cached_only && !cached) {
    unlock_entry(lock);
    pp_plan_outcome_clear(out);
    *msg = g_strdup("the plan cache holds no plan for these frames");
    return -ENOENT;
  }
  const pp_plan_request request = { .forced = s->forced,
                                    .cached = cached,
                                    .quick = s->tuning == PP_TUNING_QUICK,
                                    .no_graphs = s->no_graphs };
  const int rc = pp_engine_configure(e, model, layout, n_slots, &request, msg);
  pp_plan_info info;
  if (rc < 0) {
    unlock_entry(lock);
    pp_plan_outcome_clear(out); /* nothing to say of a configure that failed */
    return rc;
  }
  if (!pp_engine_plan_info(e, &info)) {
    unlock_entry(lock);
    return rc;
  }
  out->read = info.source == PP_PLAN_CACHED;
  if (cached && !out->read && !out->warning)
    out->warning = g_strdup_printf("the cached plan in %s no longer fits (%s); tuned again",
                                   out->path, info.refused ? info.refused : "refused");
  if (use_cache && !out->read && info.line) {
    char *failed = NULL;
    out->written = write_entry(out->path, key, info.line, &failed);
    if (failed && !out->warning)
      out->warning = failed;
    else
      g_free(failed);
  }
  unlock_entry(lock);
  pp_log(PP_LOG_DEBUG, "plan", "%s plan (%s): %s", out->read ? "cached" : "new",
         out->path ? out->path : "not cached", info.line ? info.line : "");
  return 0;
}

void
pp_plan_outcome_clear(pp_plan_outcome *out)
{
  g_clear_pointer(&out->warning, g_free);
  g_clear_pointer(&out->path, g_free);
}

char *
pp_start_hint_read(const char *dir, const char *key)
{
  g_autofree char *path = entry_path_with(dir, key, "start");
  g_autofree char *text = NULL;
  const char *why = NULL;
  return g_file_get_contents(path, &text, NULL, NULL)
             ? entry_value(text, HINT_HEADER, key, "hint", &why)
             : NULL;
}

void
pp_start_hint_write(const char *dir, const char *key, const char *hint)
{
  g_autofree char *path = entry_path_with(dir, key, "start");
  g_autofree char *failed = NULL;
  if (!write_lines(path, HINT_HEADER, key, "hint", hint, &failed))
    pp_log(PP_LOG_DEBUG, "plan", "start hint not kept: %s", failed);
}
