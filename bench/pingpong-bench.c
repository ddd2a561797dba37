// SPDX-License-Identifier: LGPL-2.1-or-later
/* pingpong-bench: each reference workload of docs/ARCHITECTURE.md (seed, hd,
 * hd-nv12, hd-luma, tiny, balanced, deep) through cudamlp on the GPU with slots = 1, 2, 3, 4, in a
 * real pipeline:
 *
 *   appsrc (frames in cudamlp's own pinned pool) ! cudamlp ! fakesink
 *
 * and one table: frames/s (median of repeated runs, measured at the sink
 * after a warm-up), the element's per-frame latency p50/p99 over exactly the
 * measured frames, each stage alone on the same pinned frame (H2D, MLP, D2H;
 * CUDA events, medians), the physical bound (the period that the frame's
 * bytes at the pinned copy bandwidth measured at start, each direction
 * alone and both at once, and its FLOPs at the device's peak for the
 * precision, allow: bench-bound.c), `of bound`
 * (bound / measured period), and the MLP of a plain-cuBLAS implementation
 * of the same math, timed in the same run. Paced, the bound is a frame's
 * latency floor (its slowest stage at those rates) and `of bound` the floor
 * over the latency p50.
 *
 * --interval-us U paces the source like a live one: frame i is pushed at
 * i·U after the first, so with U above a frame's own time each frame finds
 * the GPU idle and its latency is its own chain, not the queue behind it
 * (saturated, latency ≈ slots × period by Little's law).
 *
 * Several GPUs: --devices 0,1 spreads one cudamlp's slots over them (the
 * stages alone are then timed on the first device, with its part of the
 * element's plan line); --streams S runs S such branches in one pipeline
 * (stream s on the (s mod G)-th device), frames/s then being their sum;
 * with --shared, the streams of a device share one backend (shared=true).
 *
 * --backend cpu runs every step on the CPU backend, which has no copies:
 * its MLP alone is timed, the copy columns say "–".
 *
 *   pingpong-bench [--workloads seed,hd,tiny,balanced] [--slots 1,2,3,4]
 *                  [--frames 4096] [--warmup 128] [--repeats 3]
 *                  [--completion auto|consumer|event-thread]
 *                  [--precision fp32|tf32|bf16|fp16]
 *                  [--devices 0,1] [--streams S] [--shared] [--backend cpu]
 *                  [--trace DIR] [--interval-us U]
 */
#include <cuda_runtime_api.h>
#include <gst/gst.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench-run.h"
#include "bench.h"
#include "model.h"
#include "precision.h"
#include "stats.h"
#include "timing.h"

static const workload workloads[] = {
  { "seed", "video/x-raw,format=GRAY8,width=1024,height=1024,framerate=0/1", "rows", 16, 1024, 1,
    "compute", "rgb", NULL },
  { "hd", "video/x-raw,format=RGB,width=1920,height=1080,framerate=0/1", "patches", 8, 256, 1,
    "H2D", "rgb", NULL },
  /* A decoder's frames as they come: 1.5 bytes a pixel cross the bus, the
   * conversion to R,G,B happens in the kernels' loads. */
  { "hd-nv12", "video/x-raw,format=NV12,width=1920,height=1080,framerate=0/1", "patches", 8, 256, 1,
    "MLP", "rgb", NULL },
  { "hd-luma", "video/x-raw,format=NV12,width=1920,height=1080,framerate=0/1", "patches", 8, 256, 1,
    "MLP", "luma", NULL },
  { "tiny", "video/x-raw,format=GRAY8,width=256,height=256,framerate=0/1", "rows", 16, 64, 1,
    "launch latency", "rgb", NULL },
  { "balanced",
    "other/tensors,format=static,num_tensors=1,types=float32,dimensions=(string)256:4096:1:1,"
    "framerate=0/1",
    "rows", 16, 1024, 256, "all three", "rgb", NULL },
  /* A deeper network of the kind PyTorch users train: four layers, GELU
   * and SiLU, a plain last Linear. */
  { "deep", "video/x-raw,format=RGB,width=1920,height=1080,framerate=0/1", "patches", 8, 0, 1,
    "MLP", "rgb",
    "linear(192,512), gelu, linear(512,256), gelu, linear(256,64), silu, linear(64,1)" },
  /* Narrow and deep, the case for a kernel that keeps every layer on chip:
   * four hidden layers of 64. */
  { "narrow", "video/x-raw,format=RGB,width=1920,height=1080,framerate=0/1", "patches", 8, 0, 1,
    "H2D", "rgb",
    "linear(192,64), relu, linear(64,64), relu, linear(64,64), relu, linear(64,64), relu, "
    "linear(64,1)" },
};

/* A stage's time for the table: "–" where there is no such stage. */
static gchar *
micros(double us)
{
  return us < 0 ? g_strdup("–") : g_strdup_printf("%.1f", us);
}

static gboolean
listed(const char *list, const char *name)
{
  g_auto(GStrv) items = g_strsplit(list, ",", -1);
  return g_strv_contains((const char *const *) items, name);
}

int
main(int argc, char **argv)
{
  options o = { .frames = 4096, .warmup = 128, .repeats = 3, .streams = 1 };
  GOptionEntry entries[] = {
    { "workloads", 0, 0, G_OPTION_ARG_STRING, &o.workloads,
      "seed,hd,hd-nv12,hd-luma,tiny,balanced,deep,narrow", "LIST" },
    { "slots", 0, 0, G_OPTION_ARG_STRING, &o.slots, "slot counts, 1,2,3,4", "LIST" },
    { "frames", 0, 0, G_OPTION_ARG_INT, &o.frames, "measured frames per run (4096)", "N" },
    { "warmup", 0, 0, G_OPTION_ARG_INT, &o.warmup, "frames before measuring (128)", "N" },
    { "repeats", 0, 0, G_OPTION_ARG_INT, &o.repeats, "runs per cell, median taken (3)", "N" },
    { "completion", 0, 0, G_OPTION_ARG_STRING, &o.completion,
      "auto (default: consumer), consumer or event-thread", "MODE" },
    { "tuning", 0, 0, G_OPTION_ARG_STRING, &o.tuning,
      "cudamlp's tuning: cached (default), full or quick", "T" },
    { "plan", 0, 0, G_OPTION_ARG_STRING, &o.plan,
      "cudamlp's plan property: a plan line, or part of one, to run", "LINE" },
    { "precision", 0, 0, G_OPTION_ARG_STRING, &o.precision, "fp32|tf32|bf16|fp16", "P" },
    { "backend", 0, 0, G_OPTION_ARG_STRING, &o.backend,
      "cuda (default), or cpu: frames/s and latency only, no GPU timings (small workloads: tiny)",
      "B" },
    { "devices", 0, 0, G_OPTION_ARG_STRING, &o.devices,
      "CUDA devices (0): with one stream, cudamlp's device-id, its slots spread over the list "
      "(slots must be at least its length); with --streams, stream s on the (s mod G)-th",
      "LIST" },
    { "streams", 0, 0, G_OPTION_ARG_INT, &o.streams,
      "S appsrc ! cudamlp ! fakesink branches in one pipeline, each fed by its own thread; "
      "frames/s is their sum, --frames per stream (1)",
      "S" },
    { "shared", 0, 0, G_OPTION_ARG_NONE, &o.shared,
      "every stream's cudamlp with shared=true: one backend (weights, plan, slots) for all the "
      "streams of a device",
      NULL },
    { "max-batch", 0, 0, G_OPTION_ARG_INT, &o.max_batch,
      "with --shared, frames of up to B streams run as one job (cudamlp's max-batch; 1)", "B" },
    { "interval-us", 0, 0, G_OPTION_ARG_INT, &o.interval_us,
      "push a frame every U microseconds, like a live source, instead of as fast as taken: latency "
      "is "
      "then each frame's own (0)",
      "U" },
    { "trace", 0, 0, G_OPTION_ARG_FILENAME, &o.trace_dir,
      "after each cell's runs, one more of 512 frames traced (trace-file) into "
      "DIR/WORKLOAD-slotsN.json",
      "DIR" },
    { NULL },
  };
  GOptionContext *ctx = g_option_context_new("- cudamlp on the reference workloads");
  g_option_context_add_main_entries(ctx, entries, NULL);
  g_option_context_add_group(ctx, gst_init_get_option_group());
  GError *err = NULL;
  if (!g_option_context_parse(ctx, &argc, &argv, &err)) {
    fprintf(stderr, "%s\n", err->message);
    return 2;
  }
  g_option_context_free(ctx);
  if (!o.workloads)
    o.workloads = g_strdup("seed,hd,hd-nv12,hd-luma,tiny,balanced,deep,narrow");
  if (!o.slots)
    o.slots = g_strdup("1,2,3,4");
  /* A shared backend reports through its completion thread, whatever the
   * element's completion says: the stages alone are timed the same way. */
  if (o.shared) {
    g_free(o.completion);
    o.completion = g_strdup("event-thread");
  }
  if (!o.completion)
    o.completion = g_strdup("auto");
  if (!o.precision)
    o.precision = g_strdup("fp32");
  pp_precision precision;
  if (pp_precision_parse(o.precision, &precision) < 0) {
    fprintf(stderr, "--precision %s: fp32, tf32, bf16 or fp16\n", o.precision);
    return 2;
  }
  if (!o.tuning)
    o.tuning = g_strdup("cached");
  if (o.frames > PP_STATS_WINDOW)
    fprintf(stderr, "note: latency percentiles cover the last %d frames\n", PP_STATS_WINDOW);

  /* The plugin from the build tree this program came from, when it is
   * neither installed nor on GST_PLUGIN_PATH. */
  GstElementFactory *factory = gst_element_factory_find("cudamlp");
  if (!factory) {
    gst_registry_scan_path(gst_registry_get(), PP_BUILD_ROOT "/plugins");
    factory = gst_element_factory_find("cudamlp");
  }
  if (!factory) {
    fprintf(stderr, "pingpong-bench: no cudamlp element: install the plugins (README, "
                    "\"Installing\") or set GST_PLUGIN_PATH to the build's plugins folder\n");
    return 1;
  }
  gst_object_unref(factory);

  if (!o.backend)
    o.backend = g_strdup("cuda");
  if (!o.devices)
    o.devices = g_strdup("0");
  int devices = 0;
  struct cudaDeviceProp prop = { .name = "the CPU" };
  const gboolean on_gpu = g_str_equal(o.backend, "cuda");
  if (g_str_equal(o.backend, "cuda") &&
      (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0)) {
    fprintf(stderr, "pingpong-bench: no CUDA device\n");
    return 77;
  }
  if (devices)
    cudaGetDeviceProperties(&prop, 0);
  g_autofree gchar *sharing =
      o.shared ? g_strdup_printf(" (shared, max-batch %d)", MAX(o.max_batch, 1)) : g_strdup("");
  printf("# device: %s, %d SMs (%d visible); backend=%s devices=%s streams=%d%s completion=%s "
         "precision=%s; %d measured frames after %d, median of %d runs; %s\n",
         prop.name, prop.multiProcessorCount, devices, o.backend, o.devices, o.streams, sharing,
         o.completion, o.precision, o.frames, o.warmup, o.repeats,
         o.interval_us ? "paced" : "saturated");
  if (o.interval_us)
    printf("# paced: a frame every %d µs\n", o.interval_us);
  bench_copy_rates copy_rates = { 0 };
  double flops_rate = 0;
  if (on_gpu && bench_copy_bandwidth(atoi(o.devices), &copy_rates)) {
    flops_rate = bench_peak_flops_per_us(atoi(o.devices), o.precision);
    printf("# bound: pinned H2D %.1f GB/s, D2H %.1f GB/s, both at once %.1f GB/s together (64 MiB "
           "copies, medians), %s peak %.0f TFLOP/s (%d SMs at their clock)\n",
           copy_rates.h2d / 1e3, copy_rates.d2h / 1e3, copy_rates.both / 1e3, o.precision,
           flops_rate / 1e6, prop.multiProcessorCount);
  }
  printf("| workload | slots | frames/s | period µs | latency p50 µs | p99 µs | H2D µs | MLP µs | "
         "D2H µs | %s | bound by | of bound | cuBLAS MLP µs | MLP/cuBLAS | path |\n",
         o.interval_us ? "latency floor µs" : "bound µs");
  printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  int failures = 0;
  GString *inside = g_string_new(
      "\n| workload | slots | H2D µs | MLP µs | D2H µs | submit call µs | submit→completion µs | "
      "completion→pop µs | staged inputs | frames a job "
      "|\n|---|---|---|---|---|---|---|---|---|---|"
      "\n");
  for (size_t wi = 0; wi < G_N_ELEMENTS(workloads); wi++) {
    const workload *w = &workloads[wi];
    if (!listed(o.workloads, w->name))
      continue;
    g_auto(GStrv) slot_list = g_strsplit(o.slots, ",", -1);
    stage_times t = { 0 };
    gboolean timed = FALSE;
    /* The workload's bound, from the element's own layout and model. */
    bench_bound_times bound = { .period_us = -1, .by = "–" };
    pp_frame_layout layout;
    pp_model *model = NULL;
    g_autofree char *why = NULL;
    if (flops_rate > 0 && bench_workload_model(w, &layout, &model, &why))
      bench_bound(&layout, model, &copy_rates, flops_rate, &bound);
    g_clear_pointer(&model, pp_model_free);
    /* Lines for after the workload's rows, which they would split. */
    g_autoptr(GString) notes = g_string_new(NULL);
    for (int si = 0; slot_list[si]; si++) {
      const guint slots = atoi(slot_list[si]);
      double fps[16];
      run_result r = { 0 }, runs[16];
      int good = 0;
      /* What is under way, on stderr: a full run takes minutes. */
      fprintf(stderr, "pingpong-bench: %s, %u slots, %d runs of %d frames...\n", w->name, slots,
              MIN(o.repeats, 16), o.frames);
      for (int rep = 0; rep < o.repeats && rep < 16; rep++) {
        /* The first good run of a workload also times its stages alone. */
        if (bench_run_pipeline(w, slots, &o, &runs[good], timed ? NULL : &t)) {
          timed = TRUE;
          fps[good] = runs[good].fps;
          good++;
        }
      }
      if (o.trace_dir)
        bench_trace_run(w, slots, &o);
      if (good == 0) {
        failures++;
        printf("| %s | %u | failed |\n", w->name, slots);
        continue;
      }
      /* The run whose frames/s is the median; paced, whose latency p50 is
       * (every paced run has the source's frames/s). */
      double key[16], sorted[16];
      for (int i = 0; i < good; i++)
        key[i] = o.interval_us ? runs[i].p50_us : fps[i];
      memcpy(sorted, key, good * sizeof(double));
      const double med = pp_median(sorted, good);
      for (int i = 0; i < good; i++)
        if (key[i] == med)
          r = runs[i];
      const double period = 1e6 / r.fps;
      const pp_cuda_stage_times *st = &t.stages;
      g_autofree gchar *h2d = micros(st->h2d_us), *mlp = micros(st->mlp_us),
                       *d2h = micros(st->d2h_us), *ref = micros(t.ref_mlp_us);
      /* Saturated: the bound period against the measured one; paced: one
       * frame's floor (its slowest stage at the bound rates, every stage
       * overlapped in chunks) against its latency p50. */
      g_autofree gchar *bound_us = micros(bound.period_us);
      g_autofree gchar *of_bound =
          bound.period_us > 0
              ? g_strdup_printf("%.2f", bound.period_us / (o.interval_us ? r.p50_us : period))
              : g_strdup("–");
      g_autofree gchar *ratio =
          t.ref_mlp_us > 0 ? g_strdup_printf("%.2f", st->mlp_us / t.ref_mlp_us) : g_strdup("–");
      /* Several devices' plans are joined by '|', a table's separator. */
      g_auto(GStrv) plan_parts = g_strsplit(r.plan, "|", -1);
      g_autofree gchar *plan = g_strjoinv("\\|", plan_parts);
      printf(
          "| %s | %u | %.0f | %.1f | %.1f | %.1f | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
          w->name, slots, r.fps, period, r.p50_us, r.p99_us, h2d, mlp, d2h, bound_us, bound.by,
          of_bound, ref, ratio, plan);
      if (o.streams > 1 && strchr(o.devices, ',')) {
        g_auto(GStrv) ids = g_strsplit(o.devices, ",", PP_MAX_DEVICES);
        g_string_append_printf(notes, "# %s, %u slots: frames/s by device:", w->name, slots);
        for (guint d = 0; ids[d]; d++)
          g_string_append_printf(notes, " %s %.0f", ids[d], r.device_fps[d]);
        g_string_append(notes, "\n");
      }
      if (r.other_plan[0])
        g_string_append_printf(notes, "# %s, %u slots: stream %u runs another plan: %s\n", w->name,
                               slots, r.other_stream, r.other_plan);
      fflush(stdout);
      g_string_append_printf(
          inside,
          "| %s | %u | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %" G_GUINT64_FORMAT " | %.2f |\n",
          w->name, slots, r.h2d_us, r.mlp_us, r.d2h_us, r.submit_us, r.complete_us, r.handoff_us,
          r.staged, r.batch_mean);
    }
    if (timed && on_gpu) {
      printf("# %s MLP alone per path (µs):", w->name);
      for (unsigned p = 0; p < t.n_paths; p++)
        printf(" %s %.1f", t.paths[p].path, t.paths[p].us);
      printf("; plain cuBLAS %.1f\n", t.ref_mlp_us);
    }
    if (timed && o.streams <= 1 && strchr(o.devices, ','))
      printf("# %s: the stages alone on device %d, with its part of the plan\n", w->name, t.device);
    fputs(notes->str, stdout);
  }
  printf("\n# Inside the pipeline (element stats; GPU stages sampled 1 frame in 8, means):%s",
         inside->str);
  g_string_free(inside, TRUE);
  g_free(o.workloads), g_free(o.slots), g_free(o.completion), g_free(o.precision);
  g_free(o.devices), g_free(o.backend), g_free(o.trace_dir), g_free(o.tuning), g_free(o.plan);
  return failures ? 1 : 0;
}
