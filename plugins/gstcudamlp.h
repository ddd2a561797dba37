/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* cudamlp: an MLP on every frame, several frames in flight. The element is
 * spread over files by idea, each using only what stands below it:
 *
 *   gstcudamlp.c      the type, its states, start and stop
 *   cudamlpstream.c   the chain, the source task, events and flow returns
 *   cudamlpcaps.c     negotiation: caps queries, set_caps, allocation
 *   cudamlpmodel.c    where the weights come from, and the K they take
 *   cudamlpcontext.c  the CUDA context shared with the pipeline
 *   cudamlppreload.c  what the last start's plan loaded, loaded early
 *   cudamlpstats.c    the stats property and message
 *   cudamlpprops.c    the properties; cudamlpenums.c their enum types */
#ifndef GST_CUDA_MLP_H
#define GST_CUDA_MLP_H

#include <gst/gst.h>

#include "backend.h"
#include "engine.h"
#include "frame.h"
#include "model.h"
#include "plan_cache.h"

G_BEGIN_DECLS

#define GST_TYPE_CUDA_MLP (gst_cuda_mlp_get_type())
G_DECLARE_FINAL_TYPE(GstCudaMlp, gst_cuda_mlp, GST, CUDA_MLP, GstElement)

GST_ELEMENT_REGISTER_DECLARE(cudamlp);

/* What the element keeps for a frame from submit until it is pushed. */
typedef struct {
  GstBuffer *input;
  GstMapInfo input_map;
  GstBuffer *output;
  GstMapInfo output_map;
} GstCudaMlpFrame;

/* The properties, under the object lock; read at start and at caps. */
typedef struct {
  gchar *model_path;
  gchar *layers; /* model_desc.h's description, or NULL */
  gchar *hidden_sizes;
  guint hidden_size, outputs;
  pp_hidden_activation hidden_activation;
  guint slots;
  pp_mapping mapping;
  guint patch_size;
  pp_color color;
  gint output; /* GstCudaMlpOutput */
  pp_backend_options backend;
  gchar *device_ids;   /* device-id as given */
  gchar *device_error; /* why device-id cannot be used, or NULL */
  pp_tuning tuning;
  gchar *plan; /* a plan line to run, or NULL */
  gboolean prewake;
  gboolean shared;
  gchar *trace_file;
} GstCudaMlpSettings;

/* What the last start needed, readied early (cudamlppreload.c): cuBLASLt
 * loading from NULL→READY to start; the engine configuring, from start to
 * the first caps, for the caps the last start had. */
typedef struct {
  gchar *hint;      /* as read at NULL→READY, or as last written */
  GThread *library; /* loading cuBLASLt */
  GThread *configuring;
  GstCaps *caps;       /* the caps it configures for */
  gboolean configured; /* it configured the engine (once joined) */
  pp_plan_outcome outcome;
} GstCudaMlpPreload;

/* Where the weights come from (cudamlpmodel.c). */
typedef struct {
  /* A model file, loaded at start or, for a caps query before it, early;
   * `key` names the settings it was loaded for. */
  GMutex lock;
  pp_model *file;
  gchar *file_key;
  /* Generated weights, for the K of the caps. */
  pp_model *generated;
  gchar *generated_key;
} GstCudaMlpModels;

struct _GstCudaMlp {
  GstElement parent;
  GstPad *sinkpad, *srcpad;
  GstCudaMlpSettings settings;
  GstCudaMlpModels models;

  /* From READY: the CUDA context shared with the pipeline (a
   * GstCudaContext), or NULL where CUDA memory cannot be used; object lock. */
  GstObject *cuda_context;
  gboolean cuda_context_tried; /* since READY: NULL above means none can be had */

  /* What the last start with these settings needed, readied early
   * (cudamlppreload.c); the streaming and state-change threads use it one
   * at a time. */
  GstCudaMlpPreload preload;

  /* From start to stop. */
  pp_engine *engine;
  pp_backend_options active_devices; /* device-id resolved: the slots' devices */
  guint active_slots;
  gboolean pinned; /* the backend DMAs from pinned memory (CUDA) */
  GstAllocator *allocator;
  struct pp_trace *trace;
  guint64 chained; /* frames submitted, for the trace */
  gboolean plan_warned;
  guint64 plans_cached, plans_made; /* configures whose plan came from the cache, or not */

  /* From set_caps. */
  pp_frame_layout layout;
  const pp_model *model;
  gboolean frames_out; /* output=video-meta, as it was at caps */
  /* N, K and O of the last caps, for stats: under the object lock, as stats
   * are read from any thread while the model may be freed at stop. */
  guint caps_samples, caps_inputs, caps_outputs;
  GstBufferPool *output_pool;
  GstClockTime frame_duration;

  /* Streaming (cudamlpstream.c). */
  GstCudaMlpFrame frames[PP_MAX_TICKETS]; /* by engine ticket */
  /* What the chain returns upstream (object lock): OK; FLUSHING while
   * inactive or flushing; EOS once downstream has ended the stream (until
   * a new segment); NOT_NEGOTIATED while the caps are refused; or the
   * fatal return that stopped the stream. */
  GstFlowReturn srcresult;
  /* The stream stopped with an error (object lock), said once: until a
   * flush or the pads' next activation, even once srcresult says
   * FLUSHING. */
  gboolean stream_failed;
  /* A caps event waits until the source task has pushed every frame before
   * it: a marker numbered `drains_asked` is queued behind them, and the
   * task counts it in `drains_done` (object lock; `drained` is signalled
   * then and whenever srcresult changes). */
  GCond drained;
  guint drains_asked, drains_done;
  /* Source task only: downstream returned EOS, so frames are dropped while
   * events still go on in order, until a STREAM_START or SEGMENT passes. */
  gboolean downstream_eos;
  /* Streaming thread only: the caps last refused, so a sticky caps event
   * sent again before each buffer is refused without a second error. */
  GstCaps *refused_caps;
  GstStructure *last_stats; /* object lock; what stop saw */
};

G_END_DECLS

#endif
