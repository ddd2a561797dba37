#ifndef GST_CUDA_MLP_H
#define GST_CUDA_MLP_H

#include <gst/gst.h>

#include "backend.h"
#include "engine.h"
#include "frame.h"
#include "model.h"

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

struct _GstCudaMlp {
  GstElement parent;
  GstPad *sinkpad, *srcpad;

  /* Properties, under the object lock; read at start or set_caps. */
  gchar *model_path;
  guint slots;
  pp_mapping mapping;
  guint patch_size;
  guint hidden_size;
  gchar *hidden_sizes; /* "512,256": more hidden layers of generated weights */
  guint outputs;
  gchar *layers; /* model_desc.h's description, or NULL */
  pp_hidden_activation hidden_activation;
  pp_color color;
  gint output;                        /* GstCudaMlpOutput */
  pp_backend_options backend_options; /* with device-id's list */
  gchar *device_ids;                  /* device-id as given */
  gchar *device_error;                /* why device-id cannot be used, or NULL */

  /* From READY: the CUDA context shared with the pipeline (a GstCudaContext),
   * or NULL where CUDA memory cannot be used. Under the object lock. */
  GstObject *cuda_context;
  gboolean cuda_context_tried; /* since READY: NULL above means none can be had */

  /* From start to stop. */
  pp_engine *engine;
  struct pp_trace *trace; /* PINGPONG_TRACE, or NULL */
  guint64 chained;        /* frames submitted, for the trace */
  pp_model *file_model;   /* NULL when weights are generated */
  guint file_inputs;      /* its K, for caps queries (object lock); 0 without one */
  pp_model *generated_model;
  gchar *generated_key; /* what generated_model was made for */
  GstAllocator *allocator;
  gboolean pinned; /* the backend DMAs from pinned memory (CUDA) */
  guint active_slots;
  pp_backend_options active_devices; /* device-id resolved: the slots' devices */

  /* From set_caps. */
  pp_frame_layout layout;
  const pp_model *model;
  gboolean frames_out; /* output=video-meta, as it was at caps */
  GstBufferPool *output_pool;
  GstClockTime frame_duration;

  GstCudaMlpFrame frames[PP_MAX_TICKETS]; /* by engine ticket */
  /* What the chain returns upstream (object lock): OK; FLUSHING while
   * inactive or flushing; EOS once downstream has ended the stream (until
   * a new segment); NOT_NEGOTIATED while the caps are refused; or the
   * fatal return that stopped the stream. */
  GstFlowReturn srcresult;
  /* Source task only: downstream returned EOS, so frames are dropped while
   * events still go on in order, until a STREAM_START or SEGMENT passes. */
  gboolean downstream_eos;
  /* Streaming thread only: the caps last refused, so a sticky caps event
   * sent again before each buffer is refused without a second error. */
  GstCaps *refused_caps;
  GstStructure *last_stats; /* under the object lock; what stop saw */
};

G_END_DECLS

#endif
