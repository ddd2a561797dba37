/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The planner: candidates timed on the real shapes, the fastest kept as the
 * plan. */
#include "planner.h"

#include <errno.h>
#include <glib.h>

#include "planner_steps.h"

static const char *
completion_name(pp_completion c)
{
  return c == PP_COMPLETION_EVENT_THREAD ? "event-thread" : "consumer";
}

int
pp_planner_choose(const pp_planner *p, const pp_cuda_plan *given, pp_cuda_plan *out, char **msg)
{
  pp_cuda_plan plan = *given;
  if (!(plan.given & PP_PLAN_GRAPHS))
    plan.graphs = true;
  if (!(plan.given & PP_PLAN_SIGNAL))
    plan.signal = true;
  if ((plan.given & PP_PLAN_COMPLETION) && plan.completion != p->completion) {
    *msg = g_strdup_printf("plan: completion=%s, but the element waits with completion=%s; set "
                           "the element's completion property instead",
                           completion_name(plan.completion), completion_name(p->completion));
    return -EINVAL;
  }
  plan.completion = p->completion;
  if ((plan.given & PP_PLAN_KERNELS) && plan.whole == PP_N_PATHS &&
      plan.n_layers != p->weights->n_layers) {
    *msg = g_strdup_printf("plan: kernels= names %u layers for a model of %u", plan.n_layers,
                           p->weights->n_layers);
    return -EINVAL;
  }
  pp_cuda_path whole_alt = PP_N_PATHS;
  int rc = pp_planner_kernels(p, &plan, &whole_alt, msg);
  if (rc == 0)
    rc = pp_planner_frames(p, &plan, whole_alt, msg);
  if (rc < 0)
    return rc;
  plan.given = PP_PLAN_ALL;
  *out = plan;
  return 0;
}
