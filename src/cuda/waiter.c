/* completion=event-thread: one thread per backend waits for each frame's
 * done event in submission order and reports it, sleeping until shortly
 * before a frame is expected and polling from then on (see
 * wait_for_frame). */
#include <errno.h>
#include <glib.h>
#include <sys/prctl.h>

#include "backend_cuda_priv.h"
#include "stats.h"

/* The completion waiter sleeps until shortly before a frame is expected to
 * be done (a running mean of how long frames take), then polls its event:
 * polling sees a finished frame ~10 µs after it is done, a blocking wait
 * 28 µs later (tools/cuda-api-cost). */
#define SLEEP_STEP_US 20
#define POLL_AT_MOST_US 300

/* Waits for a frame's `done` event: sleeps in short steps (looking at the
 * event between them) until 80% of the expected time has passed, polls
 * from then on, and after POLL_AT_MOST_US of polling blocks instead. Short
 * steps keep an estimate that runs high from costing more than a step. */
static cudaError_t
wait_for_frame(cudaEvent_t done, int64_t submitted_ns, double expected_us)
{
  const int64_t poll_from = submitted_ns + (int64_t) (expected_us * 0.8 * 1000);
  int64_t give_up = 0;
  cudaError_t err;
  while ((err = cudaEventQuery(done)) == cudaErrorNotReady) {
    const int64_t now = pp_now_ns();
    if (now < poll_from) {
      const int64_t step_us = (poll_from - now) / 1000;
      g_usleep(step_us < SLEEP_STEP_US ? step_us : SLEEP_STEP_US);
      continue;
    }
    if (!give_up)
      give_up = now + POLL_AT_MOST_US * 1000;
    else if (now > give_up)
      return cudaEventSynchronize(done);
  }
  return err;
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

    const cudaError_t err = wait_for_frame(s->ev_done, submitted, expected_us);
    const double took_us = (pp_now_ns() - submitted) / 1000.0;
    char *msg = NULL;
    if (err != cudaSuccess)
      pp_cuda_fail(&msg, "a frame's work on the GPU", err, __FILE__, __LINE__);
    b->base.complete(b->base.complete_data, index, err == cudaSuccess ? 0 : -EIO, msg,
                     err == cudaSuccess && cuda_slot_free(s));
    g_free(msg);
    g_mutex_lock(&b->lock);
    /* Frames queue behind each other, so this measures submit to done as
     * the pipeline runs it; the mean follows changes within ~8 frames. */
    b->frame_us = b->frame_us ? 0.875 * b->frame_us + 0.125 * took_us : took_us;
    g_queue_pop_head(&b->pending);
    g_cond_broadcast(&b->wake);
  }
  g_mutex_unlock(&b->lock);
  return NULL;
}
