// SPDX-License-Identifier: LGPL-2.1-or-later
/* A backend the engine tests script: frames complete when and how a test
 * says. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <math.h>

#include "fake_backend.h"

static void
fake_complete_one(fake_backend *f, guint index_in_pending)
{
  const unsigned slot = g_array_index(f->pending, unsigned, index_in_pending);
  g_array_remove_index(f->pending, index_in_pending);
  const pp_job job = f->jobs[slot];
  const bool fail = f->fail_completion > 0;
  if (fail)
    f->fail_completion--;
  g_mutex_unlock(&f->lock);
  /* "Compute": the output is a function of the input, so a mix-up shows.
   * Holding slots, it lands in the output only at finish. */
  if (!f->hold_slots)
    job.output[0] = *(const float *) job.input * 2 + 1;
  f->base.complete(f->base.complete_data, slot, fail ? -EIO : 0, fail ? "disk on fire" : NULL,
                   !f->hold_slots);
  g_mutex_lock(&f->lock);
  g_cond_broadcast(&f->changed);
}

static gpointer
fake_thread(gpointer data)
{
  fake_backend *f = data;
  g_mutex_lock(&f->lock);
  while (!f->quit) {
    if (f->hold || f->consumer || f->pending->len == 0) {
      g_cond_wait(&f->changed, &f->lock);
      continue;
    }
    const guint pick = test_rng_next(&f->rng) % f->pending->len;
    const gulong delay = test_rng_next(&f->rng) % 300;
    g_mutex_unlock(&f->lock);
    g_usleep(delay);
    g_mutex_lock(&f->lock);
    if (pick < f->pending->len && !f->hold)
      fake_complete_one(f, pick);
  }
  g_mutex_unlock(&f->lock);
  return NULL;
}

static int
fake_configure(pp_backend *b, const pp_model *m, const pp_frame_layout *l, unsigned n,
               const pp_plan_request *request, char **msg)
{
  (void) b, (void) m, (void) l, (void) n, (void) request, (void) msg;
  return 0;
}

static int
fake_submit(pp_backend *b, unsigned slot, const pp_job *job, char **msg)
{
  fake_backend *f = (fake_backend *) b;
  g_mutex_lock(&f->lock);
  if (f->fail_submits > 0) {
    f->fail_submits--;
    g_mutex_unlock(&f->lock);
    *msg = g_strdup("refused");
    return -EIO;
  }
  f->jobs[slot] = *job;
  g_array_append_val(f->pending, slot);
  g_array_append_val(f->inputs, *(const float *) job->input);
  g_array_append_val(f->slots, slot);
  g_cond_broadcast(&f->changed);
  g_mutex_unlock(&f->lock);
  return 0;
}

static int
fake_finish(pp_backend *b, unsigned slot, const pp_job *job, pp_stage_times *times)
{
  fake_backend *f = (fake_backend *) b;
  (void) slot, (void) times;
  g_assert_true(f->hold_slots);
  job->output[0] = *(const float *) job->input * 2 + 1;
  f->finished++;
  return 0;
}

/* Like a GPU draining its streams: everything queued completes. */
static int
fake_sync(pp_backend *b)
{
  fake_backend *f = (fake_backend *) b;
  g_mutex_lock(&f->lock);
  while (f->pending->len)
    fake_complete_one(f, 0);
  g_mutex_unlock(&f->lock);
  return 0;
}

static void
fake_destroy(pp_backend *b)
{
  fake_backend *f = (fake_backend *) b;
  g_mutex_lock(&f->lock);
  f->quit = true;
  g_cond_broadcast(&f->changed);
  g_mutex_unlock(&f->lock);
  g_thread_join(f->thread);
  g_array_free(f->pending, TRUE);
  g_array_free(f->inputs, TRUE);
  g_array_free(f->slots, TRUE);
  g_mutex_clear(&f->lock);
  g_cond_clear(&f->changed);
  g_free(f);
}

/* pp_backend_ops.wait: "not yet" one time in three (or while held) after
 * a short sleep, else the frame completes here, on the caller's thread. */
static int
fake_wait(pp_backend *b, unsigned slot, int64_t timeout_ns)
{
  fake_backend *f = (fake_backend *) b;
  g_mutex_lock(&f->lock);
  f->waits++;
  guint at = 0;
  while (at < f->pending->len && g_array_index(f->pending, unsigned, at) != slot)
    at++;
  if (at == f->pending->len) {
    g_mutex_unlock(&f->lock);
    return 0; /* sync completed it */
  }
  const bool not_yet = f->hold || test_rng_next(&f->rng) % 3 == 0;
  const gulong delay = MIN(test_rng_next(&f->rng) % 300, (guint64) timeout_ns / 1000);
  g_mutex_unlock(&f->lock);
  g_usleep(delay);
  g_mutex_lock(&f->lock);
  int rc = 0;
  if (not_yet) {
    f->not_yet++;
    rc = -EAGAIN;
  } else {
    for (at = 0; at < f->pending->len; at++)
      if (g_array_index(f->pending, unsigned, at) == slot) {
        fake_complete_one(f, at);
        break;
      }
  }
  g_mutex_unlock(&f->lock);
  return rc;
}

static const pp_backend_ops fake_ops = {
  .abi = PP_BACKEND_ABI,
  .name = "fake",
  .configure = fake_configure,
  .submit = fake_submit,
  .finish = fake_finish,
  .sync = fake_sync,
  .destroy = fake_destroy,
};

fake_backend *
fake_new(bool hold, uint64_t seed)
{
  fake_backend *f = g_new0(fake_backend, 1);
  f->base.ops = &fake_ops;
  g_mutex_init(&f->lock);
  g_cond_init(&f->changed);
  f->pending = g_array_new(FALSE, FALSE, sizeof(unsigned));
  f->inputs = g_array_new(FALSE, FALSE, sizeof(float));
  f->slots = g_array_new(FALSE, FALSE, sizeof(unsigned));
  f->hold = hold;
  test_rng_seed(&f->rng, seed);
  f->thread = g_thread_new("fake-gpu", fake_thread, f);
  return f;
}

void
fake_report_on_consumer(fake_backend *f)
{
  static pp_backend_ops consumer_ops;
  consumer_ops = fake_ops;
  consumer_ops.wait = fake_wait;
  f->base.ops = &consumer_ops;
  f->consumer = true;
}

void
fake_set_hold(fake_backend *f, bool hold)
{
  g_mutex_lock(&f->lock);
  f->hold = hold;
  g_cond_broadcast(&f->changed);
  g_mutex_unlock(&f->lock);
}

int
fake_submit_frame(pp_engine *e, fake_frames *f, unsigned seq)
{
  unsigned ticket;
  int rc = pp_engine_acquire(e, &ticket);
  if (rc < 0)
    return rc;
  f->inputs[ticket] = (float) seq;
  f->outputs[ticket] = NAN;
  const pp_job job = { .input = &f->inputs[ticket], .output = &f->outputs[ticket] };
  char *msg = NULL;
  rc = pp_engine_submit(e, ticket, &job, GUINT_TO_POINTER(seq + 1), &msg);
  g_clear_pointer(&msg, g_free);
  return rc;
}

void
fake_expect_frame(pp_engine *e, fake_frames *f, unsigned seq, int status)
{
  pp_item item;
  assert_int_equal(pp_engine_pop(e, &item), 0);
  assert_int_equal(item.kind, PP_ITEM_FRAME);
  assert_int_equal(GPOINTER_TO_UINT(item.user), seq + 1);
  assert_int_equal(item.status, status);
  if (status == 0)
    assert_float_equal(f->outputs[item.ticket], seq * 2.0f + 1, 0);
  pp_engine_release(e, item.ticket);
}
