/* The CPU backend: one worker thread per slot stands in for a CUDA stream,
 * so the engine's ordering, drain and flush logic runs for real on machines
 * without a GPU. Each worker runs the packed-panel math of kernels/cpu_mlp. */
#include <errno.h>
#include <glib.h>
#include <string.h>

#include "backend.h"
#include "cpu_mlp.h"

typedef struct cpu_backend cpu_backend;

typedef struct {
  cpu_backend *owner;
  unsigned index;
  GThread *thread;
  GMutex lock;
  GCond wake;
  bool has_job, running, quit;
  pp_job job;
  float *x, *hidden; /* N×K inputs, N×D hidden activations */
} worker;

struct cpu_backend {
  pp_backend base;
  pp_frame_layout layout;
  uint32_t d, o;
  bool hidden_relu;
  uint64_t model_id;
  float *w0_packed, *b0;
  float *w1_packed, *w1, *b1; /* w1 used directly when O = 1 */
  unsigned n_workers;
  worker workers[PP_MAX_SLOTS];
};

static void
run_job(cpu_backend *b, worker *w)
{
  const pp_frame_layout *l = &b->layout;
  pp_cpu_gather(l, w->job.input, w->x);
  pp_cpu_linear(w->x, l->n, l->k, b->w0_packed, b->b0, b->d, b->hidden_relu, w->hidden);
  if (b->o == 1)
    pp_cpu_matvec(w->hidden, l->n, b->d, b->w1, b->b1 ? b->b1[0] : 0.0f, true, w->job.output);
  else
    pp_cpu_linear(w->hidden, l->n, b->d, b->w1_packed, b->b1, b->o, true, w->job.output);
}

static gpointer
worker_main(gpointer data)
{
  worker *w = data;
  g_mutex_lock(&w->lock);
  for (;;) {
    while (!w->has_job && !w->quit)
      g_cond_wait(&w->wake, &w->lock);
    if (w->quit)
      break;
    w->has_job = false;
    w->running = true;
    g_mutex_unlock(&w->lock);

    run_job(w->owner, w);
    w->owner->base.complete(w->owner->base.complete_data, w->index, 0, NULL, true);

    g_mutex_lock(&w->lock);
    w->running = false;
    g_cond_broadcast(&w->wake);
  }
  g_mutex_unlock(&w->lock);
  return NULL;
}

static void
stop_workers(cpu_backend *b)
{
  for (unsigned i = 0; i < b->n_workers; i++) {
    worker *w = &b->workers[i];
    g_mutex_lock(&w->lock);
    w->quit = true;
    g_cond_broadcast(&w->wake);
    g_mutex_unlock(&w->lock);
    g_thread_join(w->thread);
    g_mutex_clear(&w->lock);
    g_cond_clear(&w->wake);
    g_free(w->x);
    g_free(w->hidden);
    memset(w, 0, sizeof *w);
  }
  b->n_workers = 0;
}

static void
free_weights(cpu_backend *b)
{
  g_free(b->w0_packed);
  g_free(b->b0);
  g_free(b->w1_packed);
  g_free(b->w1);
  g_free(b->b1);
  b->w0_packed = b->b0 = b->w1_packed = b->w1 = b->b1 = NULL;
  b->model_id = 0;
}

static float *
copy_floats(const float *src, size_t count)
{
  return src ? g_memdup2(src, count * sizeof(float)) : NULL;
}

static void
load_weights(cpu_backend *b, const pp_model *m)
{
  free_weights(b);
  b->w0_packed = g_new(float, pp_cpu_packed_floats(m->d, m->k));
  pp_cpu_pack_weights(m->w0, m->d, m->k, b->w0_packed);
  b->b0 = copy_floats(m->b0, m->d);
  if (m->o == 1) {
    b->w1 = copy_floats(m->w1, m->d);
  } else {
    b->w1_packed = g_new(float, pp_cpu_packed_floats(m->o, m->d));
    pp_cpu_pack_weights(m->w1, m->o, m->d, b->w1_packed);
  }
  b->b1 = copy_floats(m->b1, m->o);
  b->model_id = m->id;
}

static int
cpu_configure(pp_backend *base, const pp_model *model, const pp_frame_layout *layout,
              unsigned n_slots, char **msg)
{
  cpu_backend *b = (cpu_backend *) base;
  if (layout->k != model->k) {
    *msg = g_strdup_printf("frames give K=%u but the model takes %u", layout->k, model->k);
    return -EINVAL;
  }
  stop_workers(b);
  if (b->model_id != model->id)
    load_weights(b, model);
  b->layout = *layout;
  b->d = model->d;
  b->o = model->o;
  b->hidden_relu = model->hidden_relu;
  for (unsigned i = 0; i < n_slots; i++) {
    worker *w = &b->workers[i];
    w->owner = b;
    w->index = i;
    g_mutex_init(&w->lock);
    g_cond_init(&w->wake);
    w->x = g_new(float, (size_t) layout->n * layout->k);
    w->hidden = g_new(float, (size_t) layout->n * model->d);
    w->thread = g_thread_new("pp-cpu-slot", worker_main, w);
    b->n_workers = i + 1;
  }
  return 0;
}

static int
cpu_submit(pp_backend *base, unsigned slot, const pp_job *job, char **msg)
{
  cpu_backend *b = (cpu_backend *) base;
  if (slot >= b->n_workers) {
    *msg = g_strdup_printf("slot %u is not configured", slot);
    return -EINVAL;
  }
  if (job->input_on_device) {
    *msg = g_strdup("the CPU backend reads frames in host memory, not device memory");
    return -EINVAL;
  }
  worker *w = &b->workers[slot];
  g_mutex_lock(&w->lock);
  w->job = *job;
  w->has_job = true;
  g_cond_broadcast(&w->wake);
  g_mutex_unlock(&w->lock);
  return 0;
}

static int
cpu_sync(pp_backend *base)
{
  cpu_backend *b = (cpu_backend *) base;
  for (unsigned i = 0; i < b->n_workers; i++) {
    worker *w = &b->workers[i];
    g_mutex_lock(&w->lock);
    while (w->has_job || w->running)
      g_cond_wait(&w->wake, &w->lock);
    g_mutex_unlock(&w->lock);
  }
  return 0;
}

static void
cpu_destroy(pp_backend *base)
{
  cpu_backend *b = (cpu_backend *) base;
  stop_workers(b);
  free_weights(b);
  g_free(b);
}

static const pp_backend_ops cpu_ops = {
  .abi = PP_BACKEND_ABI,
  .name = "cpu",
  .configure = cpu_configure,
  .submit = cpu_submit,
  .finish = NULL,
  .sync = cpu_sync,
  .destroy = cpu_destroy,
};

int
pp_backend_cpu_new(pp_backend **out, char **msg)
{
  (void) msg;
  cpu_backend *b = g_new0(cpu_backend, 1);
  b->base.ops = &cpu_ops;
  *out = &b->base;
  return 0;
}
