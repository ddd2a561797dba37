/* What backend_cuda.c (slots, submit, completion) and gpu_mlp.c (weights,
 * the MLP's kernels per layer, and choosing them) share: the backend's
 * state and the error helpers. Not for anything outside the CUDA backend. */
#ifndef PP_BACKEND_CUDA_PRIV_H
#define PP_BACKEND_CUDA_PRIV_H

#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <glib.h>

#include "backend_cuda.h"
#include "cuda_kernels.h"
#include "gemm_cublaslt.h"

/* cuBLASLt's recommended workspace on Hopper. */
#define LT_WORKSPACE_BYTES (32u << 20)
/* Timed regions start behind this much GPU busy-wait (pp_cuda_spin), so
 * the CPU has launched the whole region before the GPU gets to it. */
#define TIMING_LEAD_US 100

typedef struct cuda_backend cuda_backend;

typedef struct {
  cuda_backend *owner;
  unsigned index;
  cudaStream_t stream;
  void *staging_in;   /* pinned, one frame */
  float *staging_out; /* pinned, one result */
  void *d_in;         /* the frame on the device */
  float *d_x;         /* X as floats, for cuBLAS (byte input only) */
  float *d_h[2];      /* hidden activations, N × ldh, taking turns layer by layer */
  float *d_out;       /* N × O */
  void *workspace;    /* cuBLASLt's, one per stream */
  cudaEvent_t ev_start, ev_h2d, ev_mlp, ev_d2h, ev_done;
  pp_cuda_a x;          /* reads this slot's frame */
  pp_cuda_a h[2];       /* reads d_h[0], d_h[1] */
  cudaGraphExec_t exec; /* the MLP's kernels */
  bool staged_out;
  bool timed;
  uint64_t frames;
  int64_t submitted_ns; /* for the completion waiter's estimate */
} cuda_slot;

/* One Linear layer and its activation on the device. */
typedef struct {
  uint32_t in, out, ldw; /* ldw = pad4(out) */
  float *w;              /* out × in, nn.Linear's layout (cuBLAS, row-dot) */
  float *wt;             /* in × ldw, transposed and zero-padded (our GEMM) */
  float *b;              /* ldw, zero-padded; NULL without bias */
  pp_act act;
  bool rowdot;       /* a last layer with few outputs: pp_cuda_rowdot */
  pp_cuda_path path; /* otherwise own, own64 or cublas, as tuned */
  pp_lt_gemm *lt;    /* cuBLASLt's plan, when it has one for these shapes */
} cuda_layer;

struct cuda_backend {
  pp_backend base;
  int device;
  /* The shared CUcontext to run in, or NULL for the device's primary one;
   * every thread binds it before its CUDA calls (bind_context). */
  void *context;
  int (*ctx_set_current)(void *ctx);
  pp_precision precision;
  pp_completion completion;
  bool use_graphs;
  cudaStream_t setup_stream;
  cublasLtHandle_t lt;

  /* Weights, uploaded once per model. */
  uint64_t model_id;
  unsigned n_layers;
  cuda_layer layers[PP_MAX_LAYERS];
  uint32_t o;   /* the last layer's outputs */
  uint32_t ldh; /* pad4 of the widest hidden layer */

  /* Per layout. */
  pp_frame_layout layout;
  size_t out_bytes;
  int32_t *h_koff, *d_koff;
  bool fused; /* the whole two-layer MLP in mlp_fused, instead of layer by layer */
  pp_fused_tile fused_tile;
  char description[200];

  unsigned n_slots;
  cuda_slot slots[PP_MAX_SLOTS];

  /* PINGPONG_CUDA_TRACE=1: where submit's time goes, printed at destroy. */
  bool trace;
  unsigned timing_period; /* time one frame in this many (1 with time_every_frame) */
  /* An event recorded at a known host time (anchor_ns), so event times can
   * be put on the host's clock for traces. */
  cudaEvent_t anchor, anchor_spare;
  int64_t anchor_ns, anchor_window_ns;
  double trace_us[5]; /* staging, upload, MLP, download + completion, total */
  uint64_t trace_frames;
  double trace_waiter_cpu_us; /* waiter's busy time: sleeping excluded */

  /* Completion by event: a thread waits on each frame's event in turn. */
  GThread *waiter;
  GMutex lock;
  GCond wake;
  GQueue pending; /* slot indices, submission order */
  bool quit;
  double frame_us; /* running mean, submit to done, of the frames waited on */
};

/* "<call> failed: <CUDA's words> [file:line]" into *msg unless one is
 * there already; -EIO. */
int pp_cuda_fail(char **msg, const char *call, cudaError_t err, const char *file, int line);
int pp_blas_fail(char **msg, const char *call, cublasStatus_t status, const char *file, int line);

/* Every CUDA call is checked; these need `msg` in scope. */
#define CUDA_CHECK(call)                                                                           \
  do {                                                                                             \
    const cudaError_t err_ = (call);                                                               \
    if (err_ != cudaSuccess)                                                                       \
      return pp_cuda_fail(msg, #call, err_, __FILE__, __LINE__);                                   \
  } while (0)
#define BLAS_CHECK(call)                                                                           \
  do {                                                                                             \
    const cublasStatus_t status_ = (call);                                                         \
    if (status_ != CUBLAS_STATUS_SUCCESS)                                                          \
      return pp_blas_fail(msg, #call, status_, __FILE__, __LINE__);                                \
  } while (0)

/* ---- backend_cuda.c: shared with the files below --------------------------- */

/* Makes the backend's context current on the calling thread. */
cudaError_t cuda_bind_context(cuda_backend *b);
/* Whether finish has nothing to do for the slot's current frame. */
bool cuda_slot_free(const cuda_slot *s);
int cuda_sync(pp_backend *b);

/* ---- pinned.c ---------------------------------------------------------------- */

/* A slot's staging memory: mapped like the frames' own, then registered. */
void *cuda_staging_alloc(size_t bytes, char **msg);
void cuda_staging_free(void *ptr, size_t bytes);

/* ---- waiter.c ------------------------------------------------------------------ */

/* completion=event-thread: the thread that reports each frame. */
gpointer cuda_waiter_main(gpointer data);

/* ---- timing.c ------------------------------------------------------------------ */

/* At configure: an event at a known host time, for traces. */
int cuda_anchor_clock(cuda_backend *b, char **msg);

/* ---- what module.c puts in the module's table ---------------------------- */

int cuda_backend_new(const pp_backend_options *opts, pp_backend **out, char **msg);
int cuda_device_count(void);
int cuda_host_register(void *ptr, size_t bytes, char **msg);
void cuda_host_unregister(void *ptr);
int cuda_time_stages(pp_backend *b, const void *input, float *output, unsigned reps,
                     pp_cuda_stage_times *out, char **msg);
int cuda_time_paths(pp_backend *b, unsigned reps, double us[PP_N_PATHS], char **msg);

/* ---- gpu_mlp.c ------------------------------------------------------------ */

const char *cuda_path_name(pp_cuda_path path);

/* Uploads the model's layers (once per model id). */
int pp_gpu_mlp_load_weights(cuda_backend *b, const pp_model *m, char **msg);
void pp_gpu_mlp_free_weights(cuda_backend *b);

/* Enqueues the MLP of slot `s`'s frame on `stream`: every GEMM layer on
 * `force` (own, own64, cublas; fused for the whole MLP), or PP_N_PATHS for
 * the tuned choice. */
int pp_gpu_mlp_run(cuda_backend *b, cuda_slot *s, pp_cuda_path force, cudaStream_t stream,
                   char **msg);

/* After the slots exist and slot 0 holds a frame: plans cuBLASLt for each
 * layer, then picks each layer's kernels by timing them on slot 0 (or as
 * PINGPONG_CUDA_PATH says), and the fused kernel where it wins. */
int pp_gpu_mlp_plan(cuda_backend *b, char **msg);
void pp_gpu_mlp_unplan(cuda_backend *b);

/* "own+cublas+rowdot" or "fused": the chosen kernels, layer by layer. */
void pp_gpu_mlp_describe(const cuda_backend *b, char *text, size_t size);

/* Median MLP time with every layer on each path (negative where it does
 * not fit). */
int pp_gpu_mlp_time_paths(cuda_backend *b, unsigned reps, double us[PP_N_PATHS], char **msg);

#endif
