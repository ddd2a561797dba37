/* Reporting each frame's completion, in submission order, from its done
 * event or the done signal its kernel raises (frame_state): by a thread
 * of the backend's own (completion=event-thread), or on the consumer's
 * thread just before it pops the frame
 * (completion=consumer, cuda_wait), which saves the wake-up of one thread
 * by another on every frame. Either way the wait sleeps until shortly
 * before the frame is expected and polls from then on (wait_for_frame). */
#include <errno.h>
#include <glib.h>
#include <sys/prctl.h>

#include "backend_cuda_priv.h"
#include "stats.h"

/* The completion waiter sleeps until shortly before a frame is expected to
 * be done (how long frames take, learn_frame_time), then polls its event:
 * polling sees a finished frame ~10 µs after it is done, a blocking wait
 * 28 µs later (tools/cuda-api-cost). */
#define SLEEP_STEP_US 20
#define POLL_AT_MOST_US 300
/* completion=consumer: a sleep overshoots by this much or more on a VM's
 * timer, so the last stretch before polling is polled too. */
#define SLEEP_MARGIN_US 30
/* Between two looks at an event while polling: queries back to back keep
 * the CUDA driver's locks so busy that the thread submitting frames waits
 * on them (H100, tiny, 4 slots, event thread, PINGPONG_TRACE: its submit
 * call took 52 µs a frame at p50, the GPU idle 35 µs between the frame's
 * first two event records; with 1 µs between looks, 18 µs). */
#define POLL_GAP_NS 1000

/* `from_ns` plus 80% of `expected_us`, less `margin_us`: when to start
 * polling for a frame expected `expected_us` after `from_ns`. */
static int64_t
poll_time(int64_t from_ns, double expected_us, double margin_us)
{
  return from_ns + (int64_t) ((expected_us * 0.8 - margin_us) * 1000);
}

/* How a frame was seen done, which says what its time is worth to the
 * estimate (learn_frame_time): while polling, within a microsecond or two
 * of when it was done; at the first look, done before the wait began, so
 * its time is at most that; or after a sleep (or a blocking wait), done
 * at some point during it, the sleep too long by an unknown amount. */
typedef enum { SEEN_POLLING, SEEN_AT_ONCE, SEEN_AFTER_SLEEP } seen_how;

/* Where slot s's frame is: done (cudaSuccess), not yet, or failed. By its
 * done signal when its kernel raises one: a kernel that failed never
 * does, so `thorough` also asks the stream, which then reports the error
 * (or that everything on it has ended). By its event otherwise. */
static cudaError_t
frame_state(const cuda_slot *s, bool thorough)
{
  if (!s->signal_seq)
    return cudaEventQuery(s->ev_done);
  if (__atomic_load_n(s->done_flag, __ATOMIC_ACQUIRE) == s->signal_seq)
    return cudaSuccess;
  return thorough ? cudaStreamQuery(s->stream) : cudaErrorNotReady;
}

/* Waits for slot s's frame (frame_state): sleeps in short steps (looking at
 * it between them) until `poll_from`, polls from then on, and after
 * POLL_AT_MOST_US of polling blocks instead, or with a `deadline`
 * (pp_now_ns; 0 for none) sleeps in steps until then and returns
 * cudaErrorNotReady. Short steps keep an estimate that runs high from
 * costing more than a step. */
static cudaError_t
wait_for_frame(const cuda_slot *s, int64_t poll_from, int64_t deadline, seen_how *how)
{
  int64_t give_up = 0;
  cudaError_t err;
  *how = SEEN_AT_ONCE;
  while ((err = frame_state(s, give_up && pp_now_ns() > give_up)) == cudaErrorNotReady) {
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
      return s->signal_seq ? cudaStreamSynchronize(s->stream) : cudaEventSynchronize(s->ev_done);
    else if (now > give_up) {
      g_usleep(SLEEP_STEP_US);
      continue;
    }
    *how = SEEN_POLLING;
    /* Awake, but off the driver's locks; a done signal takes none. */
    const int64_t gap_ns = s->signal_seq ? 0 : POLL_GAP_NS;
    while (pp_now_ns() < now + gap_ns)
      ;
  }
  return err;
}

/* Reports slot `index`'s frame as done (or failed with `err`). */
static void
report(cuda_backend *b, unsigned index, cudaError_t err)
{
  char *msg = NULL;
  if (err != cudaSuccess)
    pp_cuda_fail(&msg, "a frame's work on the GPU", err, __FILE__, __LINE__);
  b->base.complete(b->base.complete_data, index, err == cudaSuccess ? 0 : -EIO, msg,
                   err == cudaSuccess && cuda_slot_free(&b->slots[index]));
  g_free(msg);
}

/* How long frames take, learnt as each is seen done. The event thread
 * keeps a running mean of submit to done, queued behind each other or
 * not, which follows changes within ~8 frames.
 *
 * The consumer keeps two figures. A frame that found the GPU idle (sent
 * after the one before was done) gives the time of a frame alone: a
 * shorter one is taken at once, longer ones move it by an eighth, as a
 * frame is never seen done before it is, so a short time is the truth and
 * a mean would learn the wait's own lateness (a late wake-up raises the
 * estimate, which makes the next wake-up later: paced tiny frames settled
 * ~10 µs late). A frame sent while the one before was still running gives
 * the gap between completions, a running mean: such a frame is done about
 * that long after the one before, not its own time after its submit.
 *
 * Either way only a time seen while polling is learnt as it is. A frame
 * done at the first look gives at most its time, so it never raises the
 * estimate; one seen after a sleep says the sleep, set by the estimate,
 * was too long, so the estimate shrinks by a quarter. Learning those
 * times instead fed the sleep's overshoot W back into the estimate: an
 * estimate E that wakes the waiter at 0.8 E + W settles at E = 5 W, tens
 * of µs for frames of a few (tiny, event thread, 4 slots: 38k frames/s
 * against 71k at 3, submit to completion 73 µs against 20; H100). Lock
 * held. */
static void
learn_frame_time(cuda_backend *b, int64_t submitted, seen_how how)
{
  const int64_t now = pp_now_ns();
  const double took_us = (now - submitted) / 1000.0;
  const bool consumer = b->completion == PP_COMPLETION_CONSUMER;
  const bool queued = consumer && submitted < b->last_done_ns;
  double *estimate = queued ? &b->gap_us : &b->frame_us;
  const double seen_us = queued ? (now - b->last_done_ns) / 1000.0 : took_us;
  if (consumer)
    b->last_done_ns = now;
  if (!*estimate) {
    *estimate = seen_us;
  } else if (how != SEEN_POLLING) {
    *estimate = MIN(*estimate, seen_us) * (how == SEEN_AFTER_SLEEP ? 0.75 : 1.0);
  } else if (!consumer || queued || seen_us > *estimate) {
    *estimate += 0.125 * (seen_us - *estimate);
  } else {
    *estimate = seen_us;
  }
}

gpointer
cuda_waiter_main(gpointer data)
{
  cuda_backend *b = data;
  cuda_bind_context(b);
  /* Sleep to within microseconds of the expected completion, not 50. */
  prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
  g_mutex_lock(&b->lock);
  for (;;) {
    while (!b->quit && g_queue_is_empty(&b->pending))
      g_cond_wait(&b->wake, &b->lock);
    if (g_queue_is_empty(&b->pending))
      break; /* quit, and nothing left to report */
    const unsigned index = GPOINTER_TO_UINT(g_queue_peek_head(&b->pending));
    cuda_slot *s = &b->slots[index];
    const int64_t submitted = s->submitted_ns;
    const double expected_us = b->frame_us;
    g_mutex_unlock(&b->lock);

    seen_how how;
    const cudaError_t err = wait_for_frame(s, poll_time(submitted, expected_us, 0), 0, &how);
    report(b, index, err);
    g_mutex_lock(&b->lock);
    learn_frame_time(b, submitted, how);
    g_queue_pop_head(&b->pending);
    g_cond_broadcast(&b->wake);
  }
  g_mutex_unlock(&b->lock);
  return NULL;
}

/* Takes `index` off the head of the pending queue, if it is still there:
 * whoever takes it reports it, so the consumer and sync never both do. */
static bool
take_head(cuda_backend *b, unsigned index, seen_how how)
{
  g_mutex_lock(&b->lock);
  const bool mine =
      !g_queue_is_empty(&b->pending) && GPOINTER_TO_UINT(g_queue_peek_head(&b->pending)) == index;
  if (mine) {
    g_queue_pop_head(&b->pending);
    learn_frame_time(b, b->slots[index].submitted_ns, how);
  }
  g_mutex_unlock(&b->lock);
  return mine;
}

int
cuda_wait(pp_backend *base, unsigned index, int64_t timeout_ns)
{
  cuda_backend *b = (cuda_backend *) base;
  const int64_t deadline = pp_now_ns() + timeout_ns;
  g_mutex_lock(&b->lock);
  const bool pending =
      !g_queue_is_empty(&b->pending) && GPOINTER_TO_UINT(g_queue_peek_head(&b->pending)) == index;
  const int64_t submitted = b->slots[index].submitted_ns;
  int64_t poll_from = poll_time(submitted, b->frame_us, SLEEP_MARGIN_US);
  if (submitted < b->last_done_ns && b->gap_us) {
    const int64_t queued = poll_time(b->last_done_ns, b->gap_us, SLEEP_MARGIN_US);
    poll_from = MAX(poll_from, queued);
  }
  g_mutex_unlock(&b->lock);
  if (!pending)
    return 0; /* sync reported it */
  static __thread bool slack_set;
  if (!slack_set) {
    prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
    slack_set = true;
  }
  /* The consumer's thread may be any of the pipeline's (0.1 µs if bound). */
  seen_how how = SEEN_AT_ONCE;
  cudaError_t err = cuda_bind_context(b);
  if (err == cudaSuccess)
    err = wait_for_frame(&b->slots[index], poll_from, deadline, &how);
  if (err == cudaErrorNotReady)
    return -EAGAIN;
  if (take_head(b, index, how))
    report(b, index, err);
  return 0;
}

void
cuda_report_pending(cuda_backend *b)
{
  for (;;) {
    g_mutex_lock(&b->lock);
    const bool empty = g_queue_is_empty(&b->pending);
    const unsigned index = empty ? 0 : GPOINTER_TO_UINT(g_queue_peek_head(&b->pending));
    g_mutex_unlock(&b->lock);
    if (empty)
      return;
    /* The streams are idle: each was done before this looked. */
    if (take_head(b, index, SEEN_AT_ONCE))
      report(b, index, frame_state(&b->slots[index], true));
  }
}
