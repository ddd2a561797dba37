/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The planner's first step: each layer on its fastest kernels, timed alone
 * on slot 0, then a whole-MLP kernel where one beats the chain. */
#include <errno.h>
#include <glib.h>

#include "gpu_timer.h"
#include "log.h"
#include "lt_table.h"
#include "planner_steps.h"

#define TUNE_REPS 10
#define TUNE_WARMUP 3
/* Runs of each cuBLAS candidate. */
#define GEMM_REPS 5

unsigned
pp_planner_reps(const pp_planner *p, unsigned full)
{
  return p->quick ? 1 : full;
}

typedef struct {
  const pp_planner *p;
  const pp_cuda_plan *plan;
  int layer; /* < 0: the whole MLP */
  uint32_t rows;
} timed_run;

static int
run_timed(void *data, cudaStream_t stream, char **msg)
{
  const timed_run *t = data;
  const pp_mlp_buffers *b = &t->p->slot->buf;
  if (t->layer >= 0)
    return pp_mlp_exec_run_layer(t->p->exec, t->plan, b, (unsigned) t->layer, t->rows, stream, msg);
  const pp_mlp_rows rows = { 0, t->rows, NULL, NULL, 0 };
  return pp_mlp_exec_run(t->p->exec, t->plan, b, &rows, stream, msg);
}

static int
time_layer(const pp_planner *p, const pp_cuda_plan *plan, unsigned layer, uint32_t rows,
           unsigned reps, double *us, char **msg)
{
  timed_run t = { p, plan, (int) layer, rows };
  return pp_gpu_time_work(p->slot->stream, run_timed, &t, p->quick ? 0 : TUNE_WARMUP, reps, us,
                          msg);
}

int
pp_planner_time_mlp_rows(const pp_planner *p, const pp_cuda_plan *plan, uint32_t rows, double *us,
                         char **msg)
{
  timed_run t = { p, plan, -1, rows };
  return pp_gpu_time_work(p->slot->stream, run_timed, &t, p->quick ? 0 : TUNE_WARMUP,
                          pp_planner_reps(p, TUNE_REPS), us, msg);
}

int
pp_planner_time_mlp(const pp_planner *p, const pp_cuda_plan *plan, double *us, char **msg)
{
  return pp_planner_time_mlp_rows(p, plan, p->layout->n, us, msg);
}

int
pp_planner_tune_gemm(const pp_planner *p, pp_cuda_plan *plan, unsigned layer, uint32_t rows,
                     double *us, char **msg)
{
  pp_layer_plan *l = &plan->layers[layer];
  const bool chunk = rows != p->layout->n;
  pp_gemm_algo algos[PP_LT_MAX_CANDIDATES];
  int found = 0;
  int rc = pp_mlp_exec_gemm_candidates(p->exec, layer, l->path, l->pieces, rows, algos,
                                       PP_LT_MAX_CANDIDATES, &found, msg);
  if (rc < 0)
    return rc;
  const int tried = p->quick ? 1 : found;
  int best = -1;
  double best_us = -1;
  for (int i = 0; i < tried; i++) {
    /* A candidate cuBLAS will not run after all is one fewer. */
    char *why = NULL;
    double t = 0;
    pp_cuda_plan candidate = *plan;
    pp_layer_plan *c = &candidate.layers[layer];
    *(chunk ? &c->chunk_algo : &c->algo) = algos[i];
    *(chunk ? &c->has_chunk_algo : &c->has_algo) = true;
    rc = pp_mlp_exec_make_gemm(p->exec, layer, l->path, l->pieces, rows, &algos[i], &why);
    if (rc == 0 && !p->quick)
      rc = time_layer(p, &candidate, layer, rows, GEMM_REPS, &t, &why);
    if (rc < 0) {
      pp_log(PP_LOG_DEBUG, "plan", "layer %u %s candidate %d refused: %s", layer,
             pp_cuda_path_name(l->path), algos[i].id, why);
      g_free(why);
      continue;
    }
    if (best < 0 || t < best_us) {
      best = i;
      best_us = t;
    }
  }
  if (best < 0) {
    *msg = g_strdup_printf("cuBLAS ran none of its %d algorithms for layer %u", found, layer);
    return -ENOTSUP;
  }
  *(chunk ? &l->chunk_algo : &l->algo) = algos[best];
  *(chunk ? &l->has_chunk_algo : &l->has_algo) = true;
  *us = best_us;
  return 0;
}

/* The layers' kernels as the plan gives them, with the cuBLAS algorithms
 * it lacks tuned. */
static int
complete_given_kernels(const pp_planner *p, pp_cuda_plan *plan, char **msg)
{
  for (unsigned i = 0; i < plan->n_layers; i++) {
    pp_layer_plan *l = &plan->layers[i];
    if (!pp_mlp_exec_fits(p->exec, l->path, i)) {
      *msg = g_strdup_printf("plan: layer %u cannot run on %s here", i, pp_cuda_path_name(l->path));
      return -EINVAL;
    }
    if (!pp_cuda_path_tunes_gemm(l->path))
      continue;
    double us;
    const int rc = l->has_algo ? pp_mlp_exec_make_gemm(p->exec, i, l->path, l->pieces, p->layout->n,
                                                       &l->algo, msg)
                               : pp_planner_tune_gemm(p, plan, i, p->layout->n, &us, msg);
    if (rc < 0)
      return rc;
  }
  return 0;
}

/* Layer i on its fastest kernels: every timed path of the table that fits
 * (own, own64, cuBLAS and, for a first layer of bytes, split). */
static int
choose_layer(const pp_planner *p, pp_cuda_plan *plan, unsigned i, char **msg)
{
  pp_layer_plan *l = &plan->layers[i];
  pp_layer_plan best = *l;
  double best_us = -1;
  for (int c = 0; c < PP_N_PATHS; c++) {
    const pp_cuda_path_info *info = pp_cuda_path_info_of(c);
    if (info->whole || !info->timed || !pp_mlp_exec_fits(p->exec, c, i))
      continue;
    *l = (pp_layer_plan){ .path = c, .pieces = p->pieces };
    double us = 0;
    int rc;
    char *why = NULL;
    if (info->tuning == PP_TUNE_GEMM) {
      rc = pp_planner_tune_gemm(p, plan, i, p->layout->n, &us, &why);
      /* Quick tuning takes cuBLAS's first algorithm untimed: time it here. */
      if (rc == 0 && p->quick)
        rc = time_layer(p, plan, i, p->layout->n, 1, &us, &why);
    } else {
      rc = time_layer(p, plan, i, p->layout->n, pp_planner_reps(p, TUNE_REPS), &us, &why);
    }
    if (rc < 0) {
      pp_log(PP_LOG_DEBUG, "plan", "layer %u: %s is not a candidate: %s", i,
             pp_cuda_path_name(l->path), why);
      g_free(why);
      continue;
    }
    pp_log(PP_LOG_DEBUG, "plan", "layer %u: %s %.1f µs", i, pp_cuda_path_name(l->path), us);
    if (best_us < 0 || us < best_us) {
      best_us = us;
      best = *l;
    }
  }
  if (best_us < 0) {
    *msg = g_strdup_printf("no kernels ran layer %u", i);
    return -EIO;
  }
  *l = best;
  return 0;
}

int
pp_planner_tune_small(const pp_planner *p, pp_cuda_plan *plan, double *us, char **msg)
{
  pp_cuda_plan small = *plan;
  small.whole = PP_PATH_SMALL;
  const unsigned choices = pp_cuda_path_info_of(PP_PATH_SMALL)->counts;
  *us = -1;
  for (unsigned rows = 1; rows < 32; rows++) {
    if (!(choices & 1u << rows))
      continue;
    small.small_rows = rows;
    double t;
    const int rc = pp_planner_time_mlp(p, &small, &t, msg);
    if (rc < 0)
      return rc;
    if (*us < 0 || t < *us) {
      *us = t;
      plan->small_rows = rows;
    }
  }
  return 0;
}

int
pp_planner_kernels(const pp_planner *p, pp_cuda_plan *plan, pp_cuda_path *whole_alt, char **msg)
{
  *whole_alt = PP_N_PATHS;
  const unsigned n = p->weights->n_layers;
  if (plan->given & PP_PLAN_KERNELS) {
    if (plan->whole == PP_N_PATHS)
      return complete_given_kernels(p, plan, msg);
    if (!pp_mlp_exec_fits(p->exec, plan->whole, 0)) {
      *msg = g_strdup_printf("plan: kernels=%s does not fit this model",
                             pp_cuda_path_name(plan->whole));
      return -EINVAL;
    }
    double us;
    return pp_cuda_path_info_of(plan->whole)->tuning == PP_TUNE_SMALL_ROWS && !plan->small_rows
               ? pp_planner_tune_small(p, plan, &us, msg)
               : 0;
  }
  plan->whole = PP_N_PATHS;
  plan->n_layers = n;
  plan->small_rows = 1;
  for (unsigned i = 0; i < n; i++)
    plan->layers[i] = (pp_layer_plan){ .path = PP_PATH_OWN, .pieces = p->pieces };
  /* Every buffer holds real values before anything is timed (at a 16-bit
   * precision, where only cuBLAS runs, each layer's candidates write the
   * next one's input). */
  const pp_mlp_rows whole = { 0, p->layout->n, NULL, NULL, 0 };
  int rc = pp_mlp_exec_fits(p->exec, PP_PATH_OWN, 0)
               ? pp_mlp_exec_run(p->exec, plan, &p->slot->buf, &whole, p->slot->stream, msg)
               : 0;
  for (unsigned i = 0; i < n && rc == 0; i++) {
    if (pp_mlp_exec_fits(p->exec, PP_PATH_ROWDOT, i))
      plan->layers[i].path = PP_PATH_ROWDOT;
    else
      rc = choose_layer(p, plan, i, msg);
  }
  /* A whole-MLP kernel, where one fits and beats the layers: two layers
   * (fused, small), more whose hidden layers fit on chip (up to 64 wide:
   * fused, warp; up to 512: wide). */
  bool any = false;
  for (int w = 0; w < PP_N_PATHS; w++)
    any = any || (pp_cuda_path_is_whole(w) && pp_mlp_exec_fits(p->exec, w, 0));
  if (rc < 0 || !any)
    return rc;
  double chain = 0, whole_us = -1;
  pp_cuda_path best_whole = PP_N_PATHS;
  rc = pp_planner_time_mlp(p, plan, &chain, msg);
  for (int w = 0; w < PP_N_PATHS && rc == 0; w++) {
    if (!pp_cuda_path_is_whole(w) || !pp_mlp_exec_fits(p->exec, w, 0))
      continue;
    pp_cuda_plan whole = *plan;
    whole.whole = w;
    double t;
    rc = pp_cuda_path_info_of(w)->tuning == PP_TUNE_SMALL_ROWS
             ? pp_planner_tune_small(p, &whole, &t, msg)
             : pp_planner_time_mlp(p, &whole, &t, msg);
    if (rc == 0 && (best_whole == PP_N_PATHS || t < whole_us)) {
      whole_us = t;
      best_whole = w;
      plan->small_rows = whole.small_rows;
    }
  }
  if (rc < 0 || best_whole == PP_N_PATHS)
    return rc;
  pp_log(PP_LOG_DEBUG, "plan", "the chain %.1f µs, %s %.1f µs", chain,
         pp_cuda_path_name(best_whole), whole_us);
  /* Without graphs (frames in CUDA memory) the submitting thread launches
   * every layer's kernels itself, cuBLASLt's at tens of µs a call, and
   * many streams sharing a backend cannot afford it where one launch does
   * (160 cameras on one H100: a whole-MLP kernel 148 µs alone kept every
   * frame, the layers at 122 µs lost 5-21%, docs/PERFORMANCE.md). */
  if (whole_us < chain || !plan->graphs)
    plan->whole = best_whole;
  else
    *whole_alt = best_whole; /* the frames' step gives it another chance */
  return 0;
}
