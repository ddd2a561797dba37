/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The CPU backend: one worker thread per slot stands in for a CUDA stream,
 * so the engine's ordering, drain and flush logic runs for real on machines
 * without a GPU. Each worker runs the packed-panel math of kernels/cpu_mlp. */
#include <errno.h>
#include <glib.h>
#include <string.h>

#include "backend.h"
#include "cpu_mlp.h"
#include "timing.h"

typedef struct cpu_backend cpu_backend;

typedef struct {
  cpu_backend *owner;
  unsigned index;
  GThread *thread;
  GMutex lock;
  GCond wake;
  bool has_job, running, quit;
  bool fail; /* the job is the one fault injection fails */
  pp_job job;
  int64_t start_ns, end_ns; /* the last job's, for finish */
  float *x;                 /* N×K inputs */
  float *hidden[2];         /* N × the widest hidden layer, taking turns */
} worker;

/* A layer's weights as the kernels want them: packed panels, or the plain
 * row when it has one output (the MatVec). */
typedef struct {
  uint32_t in, out;
  float *packed, *w, *b;
  pp_act act;
} cpu_layer;

struct cpu_backend {
  pp_backend base;
  pp_frame_layout layout;
  uint64_t model_id;
  pp_dtype dtype; /* of the weights and the activations between layers */
  unsigned n_layers;
  cpu_layer layers[PP_MAX_LAYERS];
  uint32_t max_hidden;
  unsigned n_workers;
  worker workers[PP_MAX_SLOTS];
  bool time_every_frame;
  uint64_t fail_frame; /* pp_backend_options.fail_frame */
  uint64_t submitted;  /* frames since configure */
  pp_plan_source plan_source;
  pp_startup_times startup;
};

/* The CPU backend chooses nothing: its plan is one word, so that the plan
 * cache's logic runs on machines without a GPU too. */
#define CPU_PLAN "cpu"

/* Values rounded to the backend's type, as the GPU stores them: its GEMM
 * writes the sum with the bias rounded, and the activation after it is
 * rounded again (ReLU and none change nothing rounded). */
static void
round_all(pp_dtype t, float *v, size_t count)
{
  for (size_t i = 0; i < count; i++)
    v[i] = pp_dtype_round(t, v[i]);
}

static void
act_rounded(pp_dtype t, pp_act act, float *v, size_t count)
{
  for (size_t i = 0; i < count; i++)
    v[i] = pp_dtype_round(t, pp_act_apply(act, pp_dtype_round(t, v[i])));
}

static void
run_frame(cpu_backend *b, worker *w, const void *input, float *output)
{
  const pp_frame_layout *l = &b->layout;
  const bool rounds = b->dtype != PP_DTYPE_F32;
  pp_cpu_gather(l, input, w->x);
  if (rounds)
    round_all(b->dtype, w->x, (size_t) l->n * l->k);
  const float *in = w->x;
  for (unsigned i = 0; i < b->n_layers; i++) {
    const cpu_layer *layer = &b->layers[i];
    const bool last = i + 1 == b->n_layers;
    float *out = last ? output : w->hidden[i % 2];
    /* Between layers a rounding precision rounds twice (act_rounded). */
    const pp_act act = rounds && !last ? PP_ACT(PP_ACT_IDENTITY) : layer->act;
    if (layer->out == 1)
      pp_cpu_matvec(in, l->n, layer->in, layer->w, layer->b ? layer->b[0] : 0.0f, act, out);
    else
      pp_cpu_linear(in, l->n, layer->in, layer->packed, layer->b, layer->out, act, out);
    if (rounds && !last)
      act_rounded(b->dtype, layer->act, out, (size_t) l->n * layer->out);
    in = out;
  }
}

/* A batch's frames one after the other: the CPU gains nothing from
 * running them as one. */
static void
run_job(cpu_backend *b, worker *w)
{
  if (!w->job.n_batch) {
    run_frame(b, w, w->job.input, w->job.output);
    return;
  }
  for (unsigned i = 0; i < w->job.n_batch; i++)
    run_frame(b, w, w->job.batch[i].input, w->job.batch[i].output);
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

    w->start_ns = pp_now_ns();
    if (!w->fail)
      run_job(w->owner, w);
    w->end_ns = pp_now_ns();
    /* Timing every frame (a trace): the slot waits for finish to read it. */
    if (w->fail)
      w->owner->base.complete(w->owner->base.complete_data, w->index, -EIO,
                              "the CPU backend failed this frame on purpose (PINGPONG_CPU_FAIL_AT)",
                              true);
    else
      w->owner->base.complete(w->owner->base.complete_data, w->index, 0, NULL,
                              !w->owner->time_every_frame);

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
    g_free(w->hidden[0]);
    g_free(w->hidden[1]);
    memset(w, 0, sizeof *w);
  }
  b->n_workers = 0;
}

static void
free_weights(cpu_backend *b)
{
  for (unsigned i = 0; i < b->n_layers; i++) {
    g_free(b->layers[i].packed);
    g_free(b->layers[i].w);
    g_free(b->layers[i].b);
  }
  memset(b->layers, 0, sizeof b->layers);
  b->n_layers = 0;
  b->model_id = 0;
}

/* A copy rounded to the backend's type. */
static float *
copy_floats(pp_dtype t, const float *src, size_t count)
{
  if (!src)
    return NULL;
  float *copy = g_memdup2(src, count * sizeof(float));
  round_all(t, copy, count);
  return copy;
}

static void
load_weights(cpu_backend *b, const pp_model *m)
{
  free_weights(b);
  for (unsigned i = 0; i < m->n_layers; i++) {
    const pp_layer *src = &m->layers[i];
    cpu_layer *dst = &b->layers[i];
    *dst = (cpu_layer){ .in = src->in, .out = src->out, .act = src->act };
    float *w = copy_floats(b->dtype, src->w, (size_t) src->out * src->in);
    if (src->out == 1) {
      dst->w = w;
    } else {
      dst->packed = g_new(float, pp_cpu_packed_floats(src->out, src->in));
      pp_cpu_pack_weights(w, src->out, src->in, dst->packed);
      g_free(w);
    }
    dst->b = copy_floats(b->dtype, src->b, src->out);
  }
  b->n_layers = m->n_layers;
  b->max_hidden = pp_model_max_hidden(m);
  b->model_id = m->id;
}

static int
cpu_configure(pp_backend *base, const pp_model *model, const pp_frame_layout *layout,
              unsigned n_slots, const pp_plan_request *request, char **msg)
{
  cpu_backend *b = (cpu_backend *) base;
  const int64_t start = pp_now_ns();
  if (layout->k != model->k) {
    *msg = g_strdup_printf("frames give K=%u but the model takes %u", layout->k, model->k);
    return -EINVAL;
  }
  if (request && request->forced && strcmp(request->forced, CPU_PLAN) != 0) {
    *msg = g_strdup_printf("the CPU backend has nothing to choose: its plan is '%s', not '%s'",
                           CPU_PLAN, request->forced);
    return -EINVAL;
  }
  b->plan_source = request && request->forced                             ? PP_PLAN_FORCED
                   : request && g_strcmp0(request->cached, CPU_PLAN) == 0 ? PP_PLAN_CACHED
                                                                          : PP_PLAN_TUNED;
  b->submitted = 0;
  stop_workers(b);
  if (b->model_id != model->id)
    load_weights(b, model);
  b->layout = *layout;
  for (unsigned i = 0; i < n_slots; i++) {
    worker *w = &b->workers[i];
    w->owner = b;
    w->index = i;
    g_mutex_init(&w->lock);
    g_cond_init(&w->wake);
    w->x = g_new(float, (size_t) layout->n * layout->k);
    for (unsigned h = 0; h < 2 && b->max_hidden; h++)
      w->hidden[h] = g_new(float, (size_t) layout->n * b->max_hidden);
    w->thread = g_thread_new("pp-cpu-slot", worker_main, w);
    b->n_workers = i + 1;
  }
  b->startup = (pp_startup_times){ .configure_ms = pp_ms_since(start) };
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
  for (unsigned i = 0; i < MAX(job->n_batch, 1u); i++) {
    if ((job->n_batch ? &job->batch[i] : job)->input_on_device) {
      *msg = g_strdup("the CPU backend reads frames in host memory, not device memory");
      return -EINVAL;
    }
  }
  worker *w = &b->workers[slot];
  const uint64_t frame = ++b->submitted;
  g_mutex_lock(&w->lock);
  w->job = *job;
  w->fail = frame == b->fail_frame;
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

/* Only with time_every_frame: the MLP's span, the CPU's one stage. */
static int
cpu_finish(pp_backend *base, unsigned slot, const pp_job *job, pp_stage_times *times)
{
  (void) job;
  const worker *w = &((cpu_backend *) base)->workers[slot];
  times->mlp_us = (w->end_ns - w->start_ns) / 1000.0;
  times->mlp_start_ns = w->start_ns;
  return 0;
}

static void
cpu_plan_info(pp_backend *base, pp_plan_info *info)
{
  const cpu_backend *b = (cpu_backend *) base;
  *info = (pp_plan_info){ CPU_PLAN, b->plan_source, NULL, b->startup, false };
}

static const char *
cpu_plan_key(pp_backend *base)
{
  (void) base;
  return "cpu abi=" G_STRINGIFY(PP_BACKEND_ABI);
}

static const pp_backend_ops cpu_ops = {
  .abi = PP_BACKEND_ABI,
  .name = "cpu",
  .configure = cpu_configure,
  .submit = cpu_submit,
  .finish = cpu_finish,
  .sync = cpu_sync,
  .destroy = cpu_destroy,
  .plan_info = cpu_plan_info,
  .plan_key = cpu_plan_key,
};

int
pp_backend_cpu_new(const pp_backend_options *opts, pp_backend **out, char **msg)
{
  (void) msg;
  cpu_backend *b = g_new0(cpu_backend, 1);
  b->time_every_frame = opts && opts->time_every_frame;
  b->fail_frame = opts ? opts->fail_frame : 0;
  b->dtype = pp_precision_dtype(opts ? opts->precision : PP_PRECISION_FP32);
  b->base.ops = &cpu_ops;
  *out = &b->base;
  return 0;
}
