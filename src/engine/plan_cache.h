/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Plans kept between runs. A backend's plan (its choices for a model, a
 * frame layout and a slot count) is stored under the user's cache directory
 * as its one-line form, keyed by everything that could change the right
 * answer: what the backend says its plans depend on (the GPU, driver,
 * library versions, our ABI), the model's shape (its layers, widths,
 * biases and activations: the weights' values change no timing), the frame
 * layout, the slot count, and the element's settings that reach the plan.
 * A start with a stored plan skips the tuning.
 *
 * A missing entry is the first run's; a stale, truncated, corrupt or
 * unreadable one, or a cached plan the backend no longer accepts, is never
 * an error: the backend tunes and a fresh entry replaces it, the outcome
 * carrying one warning. Entries are written whole, under a temporary name
 * renamed into place, so two processes starting at once are safe; and plans
 * are made one at a time (the directory's lock held from reading an entry
 * to writing it), so elements starting at once with the same key tune once
 * and none times its candidates while another does. */
#ifndef PP_PLAN_CACHE_H
#define PP_PLAN_CACHE_H

#include "engine.h"

typedef enum {
  PP_TUNING_CACHED, /* use a stored plan; tune and store where none fits */
  PP_TUNING_FULL,   /* always tune; store the result */
  PP_TUNING_QUICK,  /* time each candidate once; store nothing (compute-sanitizer runs) */
} pp_tuning;

typedef struct {
  pp_tuning tuning;
  const char *forced;   /* a plan line, or part of one, to run (never stored) */
  const char *dir;      /* NULL: g_get_user_cache_dir()/pingpong */
  const char *settings; /* the element's settings that reach the plan ("precision=fp32") */
  bool no_graphs;       /* pp_plan_request's; part of the key */
  /* Configure only with a plan the cache holds: -ENOENT, the engine left
   * as it was, where it holds none (a start readying the plan its last
   * frames had before its own come). */
  bool cached_only;
} pp_plan_settings;

typedef struct {
  bool read;     /* the plan came from the cache */
  bool written;  /* a fresh entry was stored */
  char *warning; /* what went wrong with the cache, to say once; or NULL */
  char *path;    /* the entry's file, or NULL where the cache is not used */
} pp_plan_outcome;

/* pp_engine_configure with the plan the cache holds for it, storing the
 * plan made otherwise. Fails only where configure itself fails, and *out
 * then holds nothing to clear. */
int pp_plan_configure(pp_engine *e, const pp_model *model, const pp_frame_layout *layout,
                      unsigned n_slots, const pp_plan_settings *settings, pp_plan_outcome *out,
                      char **msg);
void pp_plan_outcome_clear(pp_plan_outcome *out);

/* What an element's last start needed beyond its plan, kept beside the
 * plans under a key the element makes of the settings it has before its
 * frames come (its model, precision, slots), so that its next start can
 * ready it while the pipeline is still starting: cuBLASLt, which a plan
 * from the cache loads on first use (60-90 ms), and the caps its frames
 * came in. A hint is one line. Reading gives NULL where none is kept or
 * the entry is not whole, and a hint that cannot be written is left (said
 * in the debug log): neither is an error, as nothing depends on a hint but
 * how soon a start is ready.
 * `dir` as the settings' (NULL: the user's cache). g_free what read gives. */
char *pp_start_hint_read(const char *dir, const char *key);
void pp_start_hint_write(const char *dir, const char *key, const char *hint);

/* The key, as stored in the entry; g_free it. */
char *pp_plan_cache_key(const char *backend_key, const pp_model *model,
                        const pp_frame_layout *layout, unsigned n_slots, const char *settings);

#endif
