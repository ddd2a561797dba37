/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Each frame's completion, reported in order from its event or done signal. */
#include "completion.h"

#include <errno.h>
#include <glib.h>
#include <sys/prctl.h>

#include "timing.h"

/* The waiter sleeps until shortly before a frame is expected (how long
 * frames take, learn_frame_time), then polls: polling sees a finished frame
 * sooner than a blocking wait wakes (docs/PERFORMANCE.md, "Completion by the consumer"). */
#define SLEEP_STEP_US 20
#define POLL_AT_MOST_US 300
/* The consumer: a sleep overshoots by this much or more on a VM's timer,
 * so the last stretch before polling is polled too. */
#define SLEEP_MARGIN_US 30
/* Between two looks at an event: queries back to back keep the driver's
 * locks so busy that the thread submitting frames waits on them. */
#define POLL_GAP_NS 1000

struct pp_cuda_completion {
  pp_completion mode;
  const pp_cuda_device *device;
  pp_completion_report_fn report;
  void *report_data;
  pp_pending_frame frames[PP_MAX_SLOTS]; /* by slot */
  GThread *thread;
  GMutex lock;
  GCond wake;
  GQueue pending; /* slots, submission order */
  bool quit;
  double frame_us;      /* submit to done, of the frames waited on */
  int64_t last_done_ns; /* consumer: when the last frame was seen done */
  double gap_us;        /* consumer: between completions of queued frames */
};

/* `from_ns` plus 80% of `expected_us`, less `margin_us`: when to start
 * polling for a frame expected `expected_us` after `from_ns`. */
static int64_t
poll_time(int64_t from_ns, double expected_us, double margin_us)
{
  return from_ns + (int64_t) ((expected_us * 0.8 - margin_us) * 1000);
}

/* How a frame was seen done, which says what its time is worth to the
 * estimate: while polling, within a microsecond or two of when it was done;
 * at the first look, done before the wait began, so its time is at most
 * that; or after a sleep, done at some point during it, the sleep too long
 * by an unknown amount. */
typedef enum { SEEN_POLLING, SEEN_AT_ONCE, SEEN_AFTER_SLEEP } seen_how;

/* Done (cudaSuccess), not yet, or failed. By the done signal when the
 * frame's kernel raises one: a kernel that failed never does, so
 * `thorough` also asks the stream, which then reports the error. */
static cudaError_t
frame_state(const pp_pending_frame *f, bool thorough)
{
  if (!f->seq)
    return cudaEventQuery(f->done);
  if (__atomic_load_n(f->flag, __ATOMIC_ACQUIRE) == f->seq)
    return cudaSuccess;
  return thorough ? cudaStreamQuery(f->stream) : cudaErrorNotReady;
}

/* Sleeps in short steps until `poll_from`, polls from then on, and after
 * POLL_AT_MOST_US of polling blocks instead; with a `deadline` (0: none)
 * sleeps in steps until then and returns cudaErrorNotReady. Short steps
 * keep an estimate that runs high from costing more than a step. */
static cudaError_t
wait_for_frame(const pp_pending_frame *f, int64_t poll_from, int64_t deadline, seen_how *how)
{
  int64_t give_up = 0;
  cudaError_t err;
  *how = SEEN_AT_ONCE;
  while ((err = frame_state(f, give_up && pp_now_ns() > give_up)) == cudaErrorNotReady) {
    const int64_t now = pp_now_ns();
    if (deadline && now >= deadline)
      return err;
    *how = SEEN_AFTER_SLEEP;
    if (now < poll_from) {
      const int64_t step_us = (poll_from - now) / 1000;
      g_usleep(step_us < SLEEP_STEP_US ? step_us : SLEEP_STEP_US);
      continue;
    }
    if (!give_up)
      give_up = now + POLL_AT_MOST_US * 1000;
    else if (now > give_up && !deadline)
      return f->seq ? cudaStreamSynchronize(f->stream) : cudaEventSynchronize(f->done);
    else if (now > give_up) {
      g_usleep(SLEEP_STEP_US);
      continue;
    }
    *how = SEEN_POLLING;
    /* Awake, but off the driver's locks; a done signal takes none. */
    const int64_t gap_ns = f->seq ? 0 : POLL_GAP_NS;
    while (pp_now_ns() < now + gap_ns)
      ;
  }
  return err;
}

/* How long frames take, learnt as each is seen done. The event thread
 * keeps a running mean of submit to done, which follows changes within ~8
 * frames. The consumer keeps two figures: a frame that found the GPU idle
 * gives the time of a frame alone (a shorter one taken at once, longer ones
 * moving it by an eighth, as a frame is never seen done before it is, so a
 * mean would learn the wait's own lateness); a frame sent while the one
 * before still ran gives the gap between completions, a running mean.
 * Either way only a time seen while polling is learnt as it is: a frame
 * done at the first look gives at most its time, one seen after a sleep
 * says the sleep was too long (the estimate shrinks by a quarter).
 * Learning those instead fed the sleep's overshoot back into the estimate.
 * Lock held. */
static void
learn_frame_time(pp_cuda_completion *c, int64_t submitted, seen_how how)
{
  const int64_t now = pp_now_ns();
  const double took_us = (now - submitted) / 1000.0;
  const bool consumer = c->mode == PP_COMPLETION_CONSUMER;
  const bool queued = consumer && submitted < c->last_done_ns;
  double *estimate = queued ? &c->gap_us : &c->frame_us;
  const double seen_us = queued ? (now - c->last_done_ns) / 1000.0 : took_us;
  if (consumer)
    c->last_done_ns = now;
  if (!*estimate)
    *estimate = seen_us;
  else if (how != SEEN_POLLING)
    *estimate = MIN(*estimate, seen_us) * (how == SEEN_AFTER_SLEEP ? 0.75 : 1.0);
  else if (!consumer || queued || seen_us > *estimate)
    *estimate += 0.125 * (seen_us - *estimate);
  else
    *estimate = seen_us;
}

static gpointer
waiter_main(gpointer data)
{
  pp_cuda_completion *c = data;
  pp_cuda_device_bind(c->device);
  /* Sleep to within microseconds of the expected completion, not 50. */
  prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
  g_mutex_lock(&c->lock);
  for (;;) {
    while (!c->quit && g_queue_is_empty(&c->pending))
      g_cond_wait(&c->wake, &c->lock);
    if (g_queue_is_empty(&c->pending))
      break; /* quit, and nothing left to report */
    const unsigned slot = GPOINTER_TO_UINT(g_queue_peek_head(&c->pending));
    const pp_pending_frame f = c->frames[slot];
    const double expected_us = c->frame_us;
    g_mutex_unlock(&c->lock);

    seen_how how;
    const cudaError_t err = wait_for_frame(&f, poll_time(f.submitted_ns, expected_us, 0), 0, &how);
    c->report(c->report_data, slot, err);
    g_mutex_lock(&c->lock);
    learn_frame_time(c, f.submitted_ns, how);
    g_queue_pop_head(&c->pending);
    g_cond_broadcast(&c->wake);
  }
  g_mutex_unlock(&c->lock);
  return NULL;
}

pp_cuda_completion *
pp_cuda_completion_new(pp_completion mode, const pp_cuda_device *device,
                       pp_completion_report_fn report, void *data)
{
  pp_cuda_completion *c = g_new0(pp_cuda_completion, 1);
  c->mode = mode;
  c->device = device;
  c->report = report;
  c->report_data = data;
  g_mutex_init(&c->lock);
  g_cond_init(&c->wake);
  g_queue_init(&c->pending);
  if (mode == PP_COMPLETION_EVENT_THREAD)
    c->thread = g_thread_new("pp-cuda-wait", waiter_main, c);
  return c;
}

void
pp_cuda_completion_free(pp_cuda_completion *c)
{
  if (!c)
    return;
  g_mutex_lock(&c->lock);
  c->quit = true;
  g_cond_broadcast(&c->wake);
  g_mutex_unlock(&c->lock);
  if (c->thread)
    g_thread_join(c->thread);
  g_queue_clear(&c->pending);
  g_mutex_clear(&c->lock);
  g_cond_clear(&c->wake);
  g_free(c);
}

void
pp_cuda_completion_add(pp_cuda_completion *c, unsigned slot, const pp_pending_frame *f)
{
  g_mutex_lock(&c->lock);
  c->frames[slot] = *f;
  g_queue_push_tail(&c->pending, GUINT_TO_POINTER(slot));
  if (c->thread)
    g_cond_broadcast(&c->wake);
  g_mutex_unlock(&c->lock);
}

/* Takes `slot` off the head of the queue if it is still there: whoever
 * takes it reports it, so the consumer and drain never both do. */
static bool
take_head(pp_cuda_completion *c, unsigned slot, seen_how how)
{
  g_mutex_lock(&c->lock);
  const bool mine =
      !g_queue_is_empty(&c->pending) && GPOINTER_TO_UINT(g_queue_peek_head(&c->pending)) == slot;
  if (mine) {
    g_queue_pop_head(&c->pending);
    learn_frame_time(c, c->frames[slot].submitted_ns, how);
  }
  g_mutex_unlock(&c->lock);
  return mine;
}

int
pp_cuda_completion_wait(pp_cuda_completion *c, unsigned slot, int64_t timeout_ns)
{
  const int64_t deadline = pp_now_ns() + timeout_ns;
  g_mutex_lock(&c->lock);
  const bool pending =
      !g_queue_is_empty(&c->pending) && GPOINTER_TO_UINT(g_queue_peek_head(&c->pending)) == slot;
  const pp_pending_frame f = c->frames[slot];
  int64_t poll_from = poll_time(f.submitted_ns, c->frame_us, SLEEP_MARGIN_US);
  if (f.submitted_ns < c->last_done_ns && c->gap_us)
    poll_from = MAX(poll_from, poll_time(c->last_done_ns, c->gap_us, SLEEP_MARGIN_US));
  g_mutex_unlock(&c->lock);
  if (!pending)
    return 0; /* drain reported it */
  static __thread bool slack_set;
  if (!slack_set) {
    prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
    slack_set = true;
  }
  /* The consumer's thread may be any of the pipeline's: bind the device
   * (cheap when already bound). */
  seen_how how = SEEN_AT_ONCE;
  cudaError_t err = pp_cuda_device_bind(c->device);
  if (err == cudaSuccess)
    err = wait_for_frame(&f, poll_from, deadline, &how);
  if (err == cudaErrorNotReady)
    return -EAGAIN;
  if (take_head(c, slot, how))
    c->report(c->report_data, slot, err);
  return 0;
}

void
pp_cuda_completion_drain(pp_cuda_completion *c)
{
  if (c->mode == PP_COMPLETION_CONSUMER) {
    for (;;) {
      g_mutex_lock(&c->lock);
      const bool empty = g_queue_is_empty(&c->pending);
      const unsigned slot = empty ? 0 : GPOINTER_TO_UINT(g_queue_peek_head(&c->pending));
      const pp_pending_frame f = c->frames[slot];
      g_mutex_unlock(&c->lock);
      if (empty)
        break;
      /* The streams are idle: each was done before this looked. */
      if (take_head(c, slot, SEEN_AT_ONCE))
        c->report(c->report_data, slot, frame_state(&f, true));
    }
  }
  g_mutex_lock(&c->lock);
  while (!g_queue_is_empty(&c->pending))
    g_cond_wait(&c->wake, &c->lock);
  g_mutex_unlock(&c->lock);
}
