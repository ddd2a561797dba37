// SPDX-License-Identifier: LGPL-2.1-or-later
/* pingpong-bench's stage timings (bench.h): the element's plan line taken
 * apart device by device, the first device's part run on a backend of our
 * own, and on the CPU its MLP timed alone (a CPU backend has no copies). */
#include <gst/gst.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench.h"
#include "frame.h"
#include "model.h"
#include "timing.h"
#include "tensorcaps.h"

gboolean
bench_workload_model(const workload *w, pp_frame_layout *layout, pp_model **model, char **msg)
{
  GstCaps *caps = gst_caps_from_string(w->caps);
  gint fps_n, fps_d;
  /* The element's own caps → layout, so YUV workloads read what it reads. */
  gboolean ok = pp_caps_to_layout(
      caps, g_str_equal(w->mapping, "rows") ? PP_MAPPING_ROWS : PP_MAPPING_PATCHES, w->patch,
      g_str_equal(w->color, "luma") ? PP_COLOR_LUMA : PP_COLOR_RGB, layout, &fps_n, &fps_d, msg);
  gst_caps_unref(caps);
  pp_model_desc desc;
  if (w->layers)
    return ok && pp_model_desc_parse(w->layers, &desc, msg) == 0 &&
           pp_model_generate_desc(layout->k, &desc, model, msg) == 0;
  return ok && pp_model_generate(layout->k, w->hidden, w->outputs, PP_HIDDEN_AUTO, model) == 0;
}

static void
ignore_completion(void *data, unsigned slot, int status, const char *message, bool slot_free)
{
  (void) data, (void) slot, (void) status, (void) message, (void) slot_free;
}

/* The MLP alone on a CPU backend's one slot: submit, then sync, 31 times
 * after 2. */
static gboolean
time_cpu(const char *plan, const pp_frame_layout *layout, const pp_model *model, GstBuffer *frame,
         stage_times *t, char **msg)
{
  pp_backend *b = NULL;
  const pp_backend_options opts = { .kind = PP_BACKEND_CPU };
  const pp_plan_request request = { .forced = plan };
  gboolean ok = pp_backend_cpu_new(&opts, &b, msg) == 0;
  if (ok)
    b->complete = ignore_completion;
  ok = ok && b->ops->configure(b, model, layout, 1, &request, msg) == 0;
  GstMapInfo map;
  gst_buffer_map(frame, &map, GST_MAP_READ);
  float *out = g_new(float, (size_t) layout->n * model->o);
  const pp_job job = { .input = map.data, .output = out };
  double samples[31];
  for (int i = -2; ok && i < 31; i++) {
    const gint64 start = pp_now_ns();
    ok = b->ops->submit(b, 0, &job, msg) == 0 && b->ops->sync(b) == 0;
    if (i >= 0)
      samples[i] = (pp_now_ns() - start) / 1e3;
  }
  if (ok)
    t->stages = (pp_cuda_stage_times){ -1, pp_median(samples, 31), -1 };
  g_free(out);
  gst_buffer_unmap(frame, &map);
  if (b)
    b->ops->destroy(b);
  return ok;
}

gboolean
bench_time_stages(const workload *w, const element_setup *e, GstBuffer *frame, stage_times *t)
{
  char *msg = NULL;
  pp_frame_layout layout;
  pp_model *model = NULL;
  /* The first device of the element's list runs the first part of its plan. */
  g_autofree char *plan = pp_backend_plan_part(e->plan, 0);
  g_auto(GStrv) devices = g_strsplit(e->devices, ",", 2);
  t->device = devices[0] ? atoi(devices[0]) : 0;
  t->n_paths = 0;
  t->ref_mlp_us = -1;
  gboolean ok = bench_workload_model(w, &layout, &model, &msg);
  if (ok && g_str_equal(e->backend, "cuda"))
    ok = bench_time_gpu(e, t->device, plan, &layout, model, frame, t, &msg);
  else if (ok)
    ok = time_cpu(plan, &layout, model, frame, t, &msg);
  if (!ok)
    fprintf(stderr, "%s: timing the stages on device %d failed: %s\n", w->name, t->device,
            msg ? msg : "no reason given");
  pp_model_free(model);
  g_free(msg);
  return ok;
}
