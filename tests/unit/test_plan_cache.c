/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Plans kept between runs (plan_cache.h) on the CPU backend, whose plan is
 * one word, so the cache's logic runs without a GPU: the first run stores,
 * the second reads; a corrupt, truncated or foreign entry, an unwritable
 * directory and processes storing at once each still configure, give the
 * same results as an uncached run and leave a good entry behind; threads
 * configuring one key at once make its plan once. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <pthread.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "frame.h"
#include "plan_cache.h"
#include "testutil.h"

#define N 16
#define K 12
#define O 3

typedef struct {
  pp_engine *engine;
  pp_model *model;
  pp_frame_layout layout;
} rig;

static void
rig_up(rig *r)
{
  char *msg = NULL;
  pp_backend *b = NULL;
  const pp_backend_options opts = { .kind = PP_BACKEND_CPU };
  assert_int_equal(pp_backend_cpu_new(&opts, &b, &msg), 0);
  r->engine = pp_engine_new(b, NULL, NULL);
  assert_int_equal(pp_model_generate(K, 9, O, PP_HIDDEN_RELU, &r->model), 0);
  assert_int_equal(pp_layout_for_tensor(N, K, &r->layout, &msg), 0);
}

static void
rig_down(rig *r)
{
  pp_engine_free(r->engine);
  pp_model_free(r->model);
}

/* Configures through the cache in `dir`; the outcome for the caller to
 * read and clear. */
static void
configure_graphs(rig *r, const char *dir, pp_tuning tuning, const char *forced, bool no_graphs,
                 pp_plan_outcome *out)
{
  const pp_plan_settings s = { tuning, forced, dir, "precision=fp32", no_graphs, false };
  char *msg = NULL;
  if (pp_plan_configure(r->engine, r->model, &r->layout, 2, &s, out, &msg) < 0)
    fail_msg("configure: %s", msg);
}

static void
configure(rig *r, const char *dir, pp_tuning tuning, const char *forced, pp_plan_outcome *out)
{
  configure_graphs(r, dir, tuning, forced, false, out);
}

/* One frame of fixed inputs through the engine: its outputs. */
static void
run_frame(rig *r, float out[N * O])
{
  float in[N * K];
  for (int i = 0; i < N * K; i++)
    in[i] = (float) ((i * 37) % 17) / 17.0f - 0.5f;
  unsigned ticket;
  char *msg = NULL;
  test_poison(out, N * O);
  assert_int_equal(pp_engine_acquire(r->engine, &ticket), 0);
  const pp_job job = { .input = in, .output = out };
  assert_int_equal(pp_engine_submit(r->engine, ticket, &job, NULL, &msg), 0);
  pp_item item;
  assert_int_equal(pp_engine_pop(r->engine, &item), 0);
  assert_int_equal(item.status, 0);
  pp_engine_release(r->engine, item.ticket);
}

/* A run through the cache: configured, one frame, the results against an
 * uncached run's. Returns the outcome (caller clears). */
static pp_plan_outcome
cached_run(const char *dir, pp_tuning tuning)
{
  rig r, plain;
  rig_up(&r);
  rig_up(&plain);
  pp_plan_outcome out, none;
  configure(&r, dir, tuning, NULL, &out);
  configure(&plain, dir, PP_TUNING_QUICK, NULL, &none);
  assert_null(none.path); /* quick tuning neither reads nor stores */
  float a[N * O], b[N * O];
  run_frame(&r, a);
  run_frame(&plain, b);
  assert_memory_equal(a, b, sizeof a);
  rig_down(&r);
  rig_down(&plain);
  return out;
}

static char *
entry_in(const char *dir)
{
  GDir *d = g_dir_open(dir, 0, NULL);
  assert_non_null(d);
  const char *name = g_dir_read_name(d);
  assert_non_null(name);
  char *path = g_build_filename(dir, name, NULL);
  assert_null(g_dir_read_name(d)); /* one entry, no temporary files left */
  g_dir_close(d);
  return path;
}

static void
expect_warning(const pp_plan_outcome *out, const char *needle)
{
  if (!out->warning || !strstr(out->warning, needle))
    fail_msg("warning '%s' lacks '%s'", out->warning, needle);
}

static void
test_first_stores_second_reads(void **state)
{
  (void) state;
  g_autofree char *dir = g_dir_make_tmp("pp-plans-XXXXXX", NULL);
  pp_plan_outcome first = cached_run(dir, PP_TUNING_CACHED);
  assert_false(first.read);
  assert_true(first.written);
  assert_null(first.warning);
  g_autofree char *path = entry_in(dir);
  assert_string_equal(path, first.path);
  struct stat st;
  assert_int_equal(g_stat(path, &st), 0);
  const mode_t umask_now = umask(0);
  umask(umask_now);
  assert_int_equal(st.st_mode & 0777, 0644 & ~umask_now);
  g_autofree char *text = NULL;
  assert_true(g_file_get_contents(path, &text, NULL, NULL));
  assert_non_null(strstr(text, "\nplan cpu\n"));
  assert_non_null(strstr(text, "model=linear(12,9),relu,linear(9,3),relu"));

  pp_plan_outcome second = cached_run(dir, PP_TUNING_CACHED);
  assert_true(second.read);
  assert_false(second.written);
  assert_null(second.warning);
  /* full always tunes, and stores again. */
  pp_plan_outcome full = cached_run(dir, PP_TUNING_FULL);
  assert_false(full.read);
  assert_true(full.written);
  pp_plan_outcome_clear(&first);
  pp_plan_outcome_clear(&second);
  pp_plan_outcome_clear(&full);
  g_unlink(path);
  g_rmdir(dir);
}

/* A plan made without graphs (frames from a decoder sharing the context)
 * is kept apart from one made with them: neither is read for the other. */
static void
test_no_graphs_is_its_own_entry(void **state)
{
  (void) state;
  g_autofree char *dir = g_dir_make_tmp("pp-plans-XXXXXX", NULL);
  rig r;
  rig_up(&r);
  pp_plan_outcome with, without, again;
  configure_graphs(&r, dir, PP_TUNING_CACHED, NULL, false, &with);
  configure_graphs(&r, dir, PP_TUNING_CACHED, NULL, true, &without);
  assert_true(with.written && without.written);
  assert_false(without.read);
  assert_string_not_equal(with.path, without.path);
  configure_graphs(&r, dir, PP_TUNING_CACHED, NULL, true, &again);
  assert_true(again.read);
  assert_string_equal(again.path, without.path);
  g_unlink(with.path);
  g_unlink(without.path);
  pp_plan_outcome_clear(&with);
  pp_plan_outcome_clear(&without);
  pp_plan_outcome_clear(&again);
  rig_down(&r);
  g_rmdir(dir);
}

/* Whatever is in the entry's place, the run goes on and a good entry
 * replaces it. */
static void
test_bad_entries_are_replaced(void **state)
{
  (void) state;
  static const struct {
    const char *text, *needle;
  } bad[] = {
    { "\x01\x02 not text at all", "not a whole plan cache entry" },
    { "pingpong plan cache 1\nkey ", "not a whole plan cache entry" }, /* truncated */
    { "", "not a whole plan cache entry" },
    { "pingpong plan cache 1\nkey backend=cuda other GPU\nplan cpu\n", "stored for another key" },
    { "pingpong plan cache 1\nKEY\nplan cpu\n", "stored for another key" },
  };
  g_autofree char *dir = g_dir_make_tmp("pp-plans-XXXXXX", NULL);
  pp_plan_outcome first = cached_run(dir, PP_TUNING_CACHED);
  for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
    assert_true(g_file_set_contents(first.path, bad[i].text, -1, NULL));
    pp_plan_outcome out = cached_run(dir, PP_TUNING_CACHED);
    assert_false(out.read);
    assert_true(out.written);
    expect_warning(&out, bad[i].needle);
    pp_plan_outcome again = cached_run(dir, PP_TUNING_CACHED);
    assert_true(again.read);
    assert_null(again.warning);
    pp_plan_outcome_clear(&out);
    pp_plan_outcome_clear(&again);
  }
  /* A plan the backend refuses (the CPU backend's is "cpu"): tuned again. */
  g_autofree char *text = NULL;
  assert_true(g_file_get_contents(first.path, &text, NULL, NULL));
  GString *wrong = g_string_new(text);
  g_string_replace(wrong, "\nplan cpu", "\nplan kernels=fused", 1);
  assert_true(g_file_set_contents(first.path, wrong->str, -1, NULL));
  g_string_free(wrong, TRUE);
  pp_plan_outcome refused = cached_run(dir, PP_TUNING_CACHED);
  assert_false(refused.read);
  assert_true(refused.written);
  expect_warning(&refused, "no longer fits");
  pp_plan_outcome_clear(&refused);
  /* An unreadable entry (a directory in its place) is said, not fatal. */
  g_unlink(first.path);
  assert_int_equal(g_mkdir(first.path, 0755), 0);
  pp_plan_outcome unreadable = cached_run(dir, PP_TUNING_CACHED);
  assert_false(unreadable.read);
  expect_warning(&unreadable, "cannot read the plan cache entry");
  pp_plan_outcome_clear(&unreadable);
  g_rmdir(first.path);
  pp_plan_outcome_clear(&first);
  g_rmdir(dir);
}

/* A directory that cannot be made (its parent is a file): every run
 * configures and says so, and nothing is read. */
static void
test_unwritable_directory(void **state)
{
  (void) state;
  g_autofree char *base = g_dir_make_tmp("pp-plans-XXXXXX", NULL);
  g_autofree char *file = g_build_filename(base, "a-file", NULL);
  assert_true(g_file_set_contents(file, "x", -1, NULL));
  g_autofree char *dir = g_build_filename(file, "pingpong", NULL);
  for (int i = 0; i < 2; i++) {
    pp_plan_outcome out = cached_run(dir, PP_TUNING_CACHED);
    assert_false(out.read);
    assert_false(out.written);
    expect_warning(&out, "cannot make the plan cache directory");
    pp_plan_outcome_clear(&out);
  }
  g_unlink(file);
  g_rmdir(base);
}

/* Forced plans are never stored: a part of a line tuned around is not the
 * plan for everyone. */
static void
test_forced_plans_are_not_cached(void **state)
{
  (void) state;
  g_autofree char *dir = g_dir_make_tmp("pp-plans-XXXXXX", NULL);
  rig r;
  rig_up(&r);
  pp_plan_outcome out;
  configure(&r, dir, PP_TUNING_CACHED, "cpu", &out);
  assert_null(out.path);
  assert_false(out.written);
  pp_plan_info info;
  assert_true(pp_engine_plan_info(r.engine, &info));
  assert_int_equal(info.source, PP_PLAN_FORCED);
  rig_down(&r);
  GDir *d = g_dir_open(dir, 0, NULL);
  assert_null(g_dir_read_name(d));
  g_dir_close(d);
  g_rmdir(dir);
}

/* cached_only configures with a plan the cache holds and with nothing
 * else: -ENOENT, the engine left unconfigured, where it holds none (and
 * nothing stored then); the plan the first run stored, afterwards. */
static void
test_cached_only(void **state)
{
  (void) state;
  g_autofree char *dir = g_dir_make_tmp("pp-plans-XXXXXX", NULL);
  rig r;
  rig_up(&r);
  pp_plan_settings s = { PP_TUNING_CACHED, NULL, dir, "precision=fp32", false, true };
  pp_plan_outcome out;
  char *msg = NULL;
  assert_int_equal(pp_plan_configure(r.engine, r.model, &r.layout, 2, &s, &out, &msg), -ENOENT);
  assert_non_null(strstr(msg, "holds no plan"));
  g_free(msg);
  msg = NULL;
  assert_false(pp_engine_is_configured(r.engine));
  assert_null(out.path);
  GDir *d = g_dir_open(dir, 0, NULL);
  assert_null(g_dir_read_name(d));
  g_dir_close(d);
  s.cached_only = false;
  assert_int_equal(pp_plan_configure(r.engine, r.model, &r.layout, 2, &s, &out, &msg), 0);
  assert_true(out.written);
  pp_plan_outcome_clear(&out);
  rig_down(&r);
  rig_up(&r);
  s.cached_only = true;
  assert_int_equal(pp_plan_configure(r.engine, r.model, &r.layout, 2, &s, &out, &msg), 0);
  assert_true(out.read);
  assert_true(pp_engine_is_configured(r.engine));
  g_autofree char *path = g_strdup(out.path);
  pp_plan_outcome_clear(&out);
  rig_down(&r);
  g_unlink(path);
  g_rmdir(dir);
}

/* The file of the start hint kept for `key` in `dir`. */
static char *
hint_entry(const char *dir, const char *key)
{
  g_autofree char *head = g_strdup_printf("pingpong start hint 1\nkey %s\n", key);
  GDir *d = g_dir_open(dir, 0, NULL);
  const char *name;
  char *found = NULL;
  while (!found && (name = g_dir_read_name(d))) {
    g_autofree char *path = g_build_filename(dir, name, NULL);
    g_autofree char *text = NULL;
    if (g_file_get_contents(path, &text, NULL, NULL) && g_str_has_prefix(text, head))
      found = g_steal_pointer(&path);
  }
  g_dir_close(d);
  assert_non_null(found);
  return found;
}

/* A start hint reads back as written, under its own key only; a second
 * write replaces it; an entry cut short, of another kind or for another
 * key reads as none, as does an unwritable directory's. */
static void
test_start_hints(void **state)
{
  (void) state;
  g_autofree char *dir = g_dir_make_tmp("pp-plans-XXXXXX", NULL);
  assert_null(pp_start_hint_read(dir, "model=a precision=fp32"));
  pp_start_hint_write(dir, "model=a precision=fp32", "cublaslt");
  pp_start_hint_write(dir, "model=b precision=fp32", "nothing");
  g_autofree char *a = pp_start_hint_read(dir, "model=a precision=fp32");
  g_autofree char *b = pp_start_hint_read(dir, "model=b precision=fp32");
  assert_string_equal(a, "cublaslt");
  assert_string_equal(b, "nothing");
  assert_null(pp_start_hint_read(dir, "model=a precision=bf16"));
  pp_start_hint_write(dir, "model=a precision=fp32", "nothing");
  g_autofree char *again = pp_start_hint_read(dir, "model=a precision=fp32");
  assert_string_equal(again, "nothing");

  /* Each entry cut short, then one holding a plan where a hint was. */
  GDir *d = g_dir_open(dir, 0, NULL);
  const char *name;
  int entries = 0;
  while ((name = g_dir_read_name(d))) {
    g_autofree char *path = g_build_filename(dir, name, NULL);
    g_autofree char *text = NULL;
    gsize len = 0;
    assert_true(g_file_get_contents(path, &text, &len, NULL));
    assert_true(g_file_set_contents(path, text, (gssize) len - 10, NULL));
    entries++;
  }
  g_dir_close(d);
  assert_int_equal(entries, 2);
  assert_null(pp_start_hint_read(dir, "model=a precision=fp32"));
  assert_null(pp_start_hint_read(dir, "model=b precision=fp32"));
  /* a's entry with a plan entry's first line. */
  pp_start_hint_write(dir, "model=a precision=fp32", "cublaslt");
  g_autofree char *a_path = hint_entry(dir, "model=a precision=fp32");
  g_autofree char *a_text = NULL;
  assert_true(g_file_get_contents(a_path, &a_text, NULL, NULL));
  g_autofree char *plan = g_strdup_printf("pingpong plan cache 1%s", strchr(a_text, '\n'));
  assert_true(g_file_set_contents(a_path, plan, -1, NULL));
  assert_null(pp_start_hint_read(dir, "model=a precision=fp32"));
  /* b's entry holding another key's hint (as a digest's collision would). */
  pp_start_hint_write(dir, "model=b precision=fp32", "cublaslt");
  g_autofree char *b_path = hint_entry(dir, "model=b precision=fp32");
  assert_true(g_file_set_contents(
      b_path, "pingpong start hint 1\nkey model=c precision=fp32\nhint cublaslt\n", -1, NULL));
  assert_null(pp_start_hint_read(dir, "model=b precision=fp32"));
  d = g_dir_open(dir, 0, NULL);
  while ((name = g_dir_read_name(d))) {
    g_autofree char *path = g_build_filename(dir, name, NULL);
    g_unlink(path);
  }
  g_dir_close(d);
  g_rmdir(dir);

  g_autofree char *file = g_build_filename(g_get_tmp_dir(), "pp-hint-a-file", NULL);
  assert_true(g_file_set_contents(file, "x", -1, NULL));
  g_autofree char *under = g_build_filename(file, "pingpong", NULL);
  pp_start_hint_write(under, "model=a", "cublaslt");
  assert_null(pp_start_hint_read(under, "model=a"));
  g_unlink(file);
}

/* Processes that start at once all store the same entry: each write is
 * whole (a temporary file renamed over it), so every reader sees a good
 * one. */
static void
test_processes_store_at_once(void **state)
{
  (void) state;
  g_autofree char *dir = g_dir_make_tmp("pp-plans-XXXXXX", NULL);
  pid_t children[8];
  for (int c = 0; c < 8; c++) {
    children[c] = fork();
    assert_true(children[c] >= 0);
    if (children[c] == 0) {
      for (int i = 0; i < 20; i++) {
        rig r;
        rig_up(&r);
        pp_plan_outcome out;
        const pp_plan_settings s = {
          i % 2 ? PP_TUNING_FULL : PP_TUNING_CACHED, NULL, dir, "precision=fp32", false, false
        };
        char *msg = NULL;
        const int rc = pp_plan_configure(r.engine, r.model, &r.layout, 2, &s, &out, &msg);
        const bool bad = rc < 0 || (out.warning && !strstr(out.warning, "no longer fits"));
        pp_plan_outcome_clear(&out);
        rig_down(&r);
        if (bad)
          _exit(1);
      }
      _exit(0);
    }
  }
  for (int c = 0; c < 8; c++) {
    int status = 0;
    assert_int_equal(waitpid(children[c], &status, 0), children[c]);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
  }
  pp_plan_outcome last = cached_run(dir, PP_TUNING_CACHED);
  assert_true(last.read);
  assert_null(last.warning);
  g_autofree char *path = entry_in(dir);
  pp_plan_outcome_clear(&last);
  g_unlink(path);
  g_rmdir(dir);
}

/* Threads that configure the same key at once: the first makes the plan
 * and stores it, every other waits for it and reads it (none times
 * candidates beside another). A wide model makes configure slow enough
 * that, unlocked, several would find no entry and tune. */
#define AT_ONCE 8

typedef struct {
  const char *dir;
  pthread_barrier_t *start;
  pp_plan_outcome out;
} concurrent_run;

static gpointer
configure_at_once(gpointer data)
{
  concurrent_run *c = data;
  rig r;
  char *msg = NULL;
  pp_backend *b = NULL;
  const pp_backend_options opts = { .kind = PP_BACKEND_CPU };
  g_assert(pp_backend_cpu_new(&opts, &b, &msg) == 0);
  r.engine = pp_engine_new(b, NULL, NULL);
  g_assert(pp_model_generate(2048, 2048, O, PP_HIDDEN_RELU, &r.model) == 0);
  g_assert(pp_layout_for_tensor(N, 2048, &r.layout, &msg) == 0);
  const pp_plan_settings s = { PP_TUNING_CACHED, NULL, c->dir, "precision=fp32", false, false };
  pthread_barrier_wait(c->start);
  g_assert(pp_plan_configure(r.engine, r.model, &r.layout, 2, &s, &c->out, &msg) == 0);
  rig_down(&r);
  return NULL;
}

static void
test_one_plan_made_at_a_time(void **state)
{
  (void) state;
  g_autofree char *dir = g_dir_make_tmp("pp-plans-XXXXXX", NULL);
  pthread_barrier_t start;
  pthread_barrier_init(&start, NULL, AT_ONCE);
  concurrent_run runs[AT_ONCE];
  GThread *threads[AT_ONCE];
  for (int i = 0; i < AT_ONCE; i++) {
    runs[i] = (concurrent_run){ dir, &start, { 0 } };
    threads[i] = g_thread_new("configure", configure_at_once, &runs[i]);
  }
  int written = 0, read = 0;
  for (int i = 0; i < AT_ONCE; i++) {
    g_thread_join(threads[i]);
    written += runs[i].out.written;
    read += runs[i].out.read;
    assert_null(runs[i].out.warning);
  }
  assert_int_equal(written, 1);
  assert_int_equal(read, AT_ONCE - 1);
  g_autofree char *path = entry_in(dir);
  for (int i = 0; i < AT_ONCE; i++)
    pp_plan_outcome_clear(&runs[i].out);
  pthread_barrier_destroy(&start);
  g_unlink(path);
  g_rmdir(dir);
}

int
main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_processes_store_at_once),
    cmocka_unit_test(test_first_stores_second_reads),
    cmocka_unit_test(test_bad_entries_are_replaced),
    cmocka_unit_test(test_unwritable_directory),
    cmocka_unit_test(test_forced_plans_are_not_cached),
    cmocka_unit_test(test_no_graphs_is_its_own_entry),
    cmocka_unit_test(test_one_plan_made_at_a_time),
    cmocka_unit_test(test_start_hints),
    cmocka_unit_test(test_cached_only),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
