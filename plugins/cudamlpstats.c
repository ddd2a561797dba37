/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* cudamlp's stats structure and the element message that carries it at EOS. */
#include "cudamlpstats.h"

GST_DEBUG_CATEGORY_EXTERN(gst_cuda_mlp_debug);
#define GST_CAT_DEFAULT gst_cuda_mlp_debug

/* "devices": each device's share, from its slots' (slot i runs on the i-th
 * device of the list mod its length). Object lock held. */
static void
add_device_stats_locked(GstCudaMlp *self, GstStructure *stats)
{
  pp_slot_stats slots[PP_MAX_SLOTS] = { 0 };
  if (self->engine)
    pp_engine_get_slot_stats(self->engine, slots);
  const pp_backend_options *devs = &self->active_devices;
  const guint n = MAX(devs->n_devices, 1);
  GValue array = G_VALUE_INIT;
  gst_value_array_init(&array, n);
  for (guint d = 0; d < n; d++) {
    pp_slot_stats sum = { 0 };
    guint count = 0;
    for (guint i = d; i < self->active_slots; i += n) {
      sum.frames += slots[i].frames;
      sum.latency_sum_us += slots[i].latency_sum_us;
      sum.timed_frames += slots[i].timed_frames;
      sum.mlp_sum_us += slots[i].mlp_sum_us;
      count++;
    }
    GValue entry = G_VALUE_INIT;
    g_value_init(&entry, GST_TYPE_STRUCTURE);
    g_value_take_boxed(
        &entry,
        gst_structure_new(
            "device", "id", G_TYPE_INT, pp_backend_slot_device(devs, d), "slots", G_TYPE_UINT,
            count, "frames", G_TYPE_UINT64, sum.frames, "latency-mean-us", G_TYPE_DOUBLE,
            sum.frames ? sum.latency_sum_us / sum.frames : 0.0, "mlp-mean-us", G_TYPE_DOUBLE,
            sum.timed_frames ? sum.mlp_sum_us / sum.timed_frames : -1.0, NULL));
    gst_value_array_append_and_take_value(&array, &entry);
  }
  gst_structure_take_value(stats, "devices", &array);
}

/* The plan in use and what starting took, part by part. Object lock held. */
static void
add_plan_stats_locked(GstCudaMlp *self, GstStructure *stats)
{
  pp_plan_info info = { .line = "" };
  if (!self->engine || !pp_engine_plan_info(self->engine, &info))
    info = (pp_plan_info){ .line = "" };
  const pp_startup_times *t = &info.startup;
  gst_structure_set(stats, "plan", G_TYPE_STRING, info.line ? info.line : "", "plan-source",
                    G_TYPE_STRING, pp_plan_source_name(info.source), "plans-cached", G_TYPE_UINT64,
                    self->plans_cached, "plans-made", G_TYPE_UINT64, self->plans_made, NULL);
  GValue startup = G_VALUE_INIT;
  g_value_init(&startup, GST_TYPE_STRUCTURE);
  g_value_take_boxed(
      &startup, gst_structure_new("startup", "open-ms", G_TYPE_DOUBLE, t->open_ms, "library-ms",
                                  G_TYPE_DOUBLE, t->library_ms, "alloc-ms", G_TYPE_DOUBLE,
                                  t->alloc_ms, "weights-ms", G_TYPE_DOUBLE, t->weights_ms,
                                  "plan-ms", G_TYPE_DOUBLE, t->plan_ms, "graphs-ms", G_TYPE_DOUBLE,
                                  t->graphs_ms, "configure-ms", G_TYPE_DOUBLE, t->configure_ms,
                                  "cublaslt", G_TYPE_BOOLEAN, info.blas, NULL));
  gst_structure_take_value(stats, "startup", &startup);
}

static GstStructure *
build_locked(GstCudaMlp *self)
{
  pp_stats stats = { 0 };
  const gchar *backend = "none", *detail = "";
  guint streams = 0;
  gdouble batch_mean = 1.0;
  const gchar *precision = "none";
  stats.h2d_mean_us = stats.mlp_mean_us = stats.d2h_mean_us = -1;
  if (!self->engine && self->last_stats)
    return gst_structure_copy(self->last_stats);
  if (self->engine) {
    pp_engine_get_stats(self->engine, &stats);
    backend = pp_engine_backend_name(self->engine);
    detail = pp_engine_backend_detail(self->engine);
    streams = pp_engine_streams(self->engine);
    batch_mean = pp_engine_batch_mean(self->engine);
    precision = pp_precision_name(self->active_devices.precision);
  }
  GstStructure *s = gst_structure_new(
      "application/x-cudamlp-stats", "backend", G_TYPE_STRING, backend, "detail", G_TYPE_STRING,
      detail, "precision", G_TYPE_STRING, precision, "streams", G_TYPE_UINT, streams, "slots",
      G_TYPE_UINT, self->active_slots, "frames", G_TYPE_UINT64, stats.frames, "latency-mean-us",
      G_TYPE_DOUBLE, stats.latency_mean_us, "latency-p50-us", G_TYPE_DOUBLE, stats.latency_p50_us,
      "latency-p99-us", G_TYPE_DOUBLE, stats.latency_p99_us, "latency-max-us", G_TYPE_DOUBLE,
      stats.latency_max_us, "h2d-mean-us", G_TYPE_DOUBLE, stats.h2d_mean_us, "mlp-mean-us",
      G_TYPE_DOUBLE, stats.mlp_mean_us, "d2h-mean-us", G_TYPE_DOUBLE, stats.d2h_mean_us,
      "staged-inputs", G_TYPE_UINT64, stats.staged_inputs, "device-inputs", G_TYPE_UINT64,
      stats.device_inputs, "consumer-submits", G_TYPE_UINT64, stats.consumer_submits,
      "submit-mean-us", G_TYPE_DOUBLE, stats.submit_mean_us, "complete-mean-us", G_TYPE_DOUBLE,
      stats.complete_mean_us, "handoff-mean-us", G_TYPE_DOUBLE, stats.handoff_mean_us, NULL);
  /* What a frame gave the model and what it made, under the last caps. */
  gst_structure_set(s, "batch-mean", G_TYPE_DOUBLE, batch_mean, NULL);
  gst_structure_set(s, "samples", G_TYPE_UINT, self->caps_samples, "inputs", G_TYPE_UINT,
                    self->caps_inputs, "outputs", G_TYPE_UINT, self->caps_outputs, NULL);
  add_device_stats_locked(self, s);
  add_plan_stats_locked(self, s);
  return s;
}

GstStructure *
gst_cuda_mlp_build_stats(GstCudaMlp *self)
{
  GST_OBJECT_LOCK(self);
  GstStructure *stats = build_locked(self);
  GST_OBJECT_UNLOCK(self);
  return stats;
}

void
gst_cuda_mlp_keep_stats(GstCudaMlp *self)
{
  GST_OBJECT_LOCK(self);
  if (self->engine) {
    g_clear_pointer(&self->last_stats, gst_structure_free);
    self->last_stats = build_locked(self);
  }
  GST_OBJECT_UNLOCK(self);
}

void
gst_cuda_mlp_post_stats(GstCudaMlp *self)
{
  GstStructure *stats = gst_cuda_mlp_build_stats(self);
  GST_INFO_OBJECT(self, "%" GST_PTR_FORMAT, stats);
  gst_element_post_message(GST_ELEMENT(self), gst_message_new_element(GST_OBJECT(self), stats));
  g_object_notify(G_OBJECT(self), "stats");
}
