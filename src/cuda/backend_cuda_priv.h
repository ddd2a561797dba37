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
/* The most chunks a frame is split into (chunks.c). */
#define PP_MAX_CHUNKS 16

typedef struct cuda_backend cuda_backend;

typedef struct {
  cuda_backend *owner;
  unsigned index;
  cudaStream_t stream;
  void *staging_in;   /* pinned, one frame */
  float *staging_out; /* pinned, one result */
  void *d_in;         /* the frame on the device */
  void *d_x;          /* X as floats for cuBLAS, or as split.c's TF32 pieces (bytes only) */
  float *d_h[2];      /* hidden activations, N × ldh, taking turns layer by layer */
  float *d_out;       /* N × O */
  void *workspace;    /* cuBLASLt's, one per stream */
  cudaEvent_t ev_start, ev_h2d, ev_mlp, ev_d2h, ev_done;
  pp_cuda_a x;          /* reads this slot's frame */
  pp_cuda_a h[2];       /* reads d_h[0], d_h[1] */
  cudaGraphExec_t exec; /* the MLP's kernels */
  /* Frames read in place, layer by layer: the kernels between the frame's
   * reader and the last layer (gpu_mlp.c), or NULL. */
  cudaGraphExec_t between_exec;
  /* A frame in chunks (chunks.c): the slot's stream copies in, these two
   * compute and copy out; ev_in[j] / ev_out[j] say chunk j has crossed /
   * been computed. */
  cudaStream_t compute, copy_out;
  cudaEvent_t ev_in[PP_MAX_CHUNKS], ev_out[PP_MAX_CHUNKS];
  cudaGraphExec_t chunk_exec[PP_MAX_CHUNKS];
  /* The done signal of a frame whose one kernel raises it (small, read in
   * place): a word of pinned host memory the kernel writes (done_flag,
   * d_done_flag for the device) and the kernel's block count. signal_seq:
   * what the current frame writes, 0 when it has an event instead. */
  volatile unsigned *done_flag;
  unsigned *d_done_flag, *d_done_count;
  unsigned signal_seq, last_seq;
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
  bool rowdot;          /* a last layer with few outputs: pp_cuda_rowdot */
  pp_cuda_path path;    /* otherwise own, own64 or cublas, as tuned */
  pp_lt_gemm *lt;       /* cuBLASLt's plan, when it has one for these shapes */
  pp_lt_gemm *lt_chunk; /* the chosen path's for a chunk's rows (chunks.c) */
  /* Layer 0 on frames of bytes, path split (split.c): W in TF32 pieces,
   * the bias they need, and cuBLASLt's plan for them. */
  void *w_split;
  float *b_split;
  pp_lt_gemm *lt_split;
} cuda_layer;

struct cuda_backend {
  pp_backend base;
  pp_backend_ops ops; /* cuda_ops, with wait for completion=consumer */
  int device;
  /* The shared CUcontext to run in, or NULL for the device's primary one;
   * every thread binds it before its CUDA calls (bind_context). */
  void *context;
  int (*ctx_set_current)(void *ctx);
  pp_precision precision;
  pp_completion completion;
  bool use_graphs;
  bool use_signal; /* PINGPONG_CUDA_SIGNAL=0: every frame by its event, for comparisons */
  /* PINGPONG_CUDA_TUNE=quick: configure times each choice once, and takes
   * cuBLAS's first algorithm, for compute-sanitizer runs (each kernel is
   * hundreds of times slower there; the choices matter less than the
   * checks). */
  bool quick_tune;
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
  /* PP_PATH_FUSED or PP_PATH_SMALL: the whole two-layer MLP in one
   * kernel; PP_N_PATHS: layer by layer. */
  pp_cuda_path whole;
  /* A whole-MLP kernel that fits but lost to the layers on the MLP alone
   * (PP_N_PATHS if none): chunks.c times it on whole frames too. */
  pp_cuda_path whole_alt;
  pp_fused_tile fused_tile;
  uint32_t small_rows; /* mlp_small's rows per block, as tuned */
  /* Frames from host memory in `chunks` chunks of chunk_rows samples
   * (chunks.c); 1: whole. chunk_offset[j]: chunk j's first byte. */
  unsigned chunks;
  /* Or read in place: the first layer's kernel reads the pinned frame
   * and the last writes the pinned result over the bus itself, no copies
   * (zero-copy, small frames). Possible where registered host pointers are
   * device pointers. */
  bool zero_copy, host_pointers;
  uint32_t chunk_rows;
  size_t chunk_offset[PP_MAX_CHUNKS + 1];
  double chunk_us_whole, chunk_us_best; /* what chose them: µs a frame, whole and best */
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
  double trace_us[5];    /* staging, upload, MLP, download + completion, total */
  int64_t trace_mark_ns; /* where the current frame's download + completion began */
  uint64_t trace_frames;
  double trace_waiter_cpu_us; /* waiter's busy time: sleeping excluded */

  /* Completion by event: a thread waits on each frame's event in turn
   * (event-thread), or the consumer does (consumer); `pending` holds the
   * frames not reported yet either way. */
  GThread *waiter;
  GMutex lock;
  GCond wake;
  GQueue pending; /* slot indices, submission order */
  bool quit;
  double frame_us;      /* submit to done, of the frames waited on (waiter.c) */
  int64_t last_done_ns; /* consumer: when the last frame was seen done */
  double gap_us;        /* consumer: between completions of queued frames */
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
/* Enqueues a frame on slot s: from host memory `src` (chunked if chosen),
 * or, with src NULL, from the device planes of `job`; the result to `dst`.
 * Then its completion goes on cuda_last_stream. */
int cuda_enqueue_frame(cuda_backend *b, cuda_slot *s, const void *src, const pp_job *job,
                       float *dst, char **msg);
cudaStream_t cuda_last_stream(const cuda_backend *b, const cuda_slot *s, const void *src);
/* What cuda_capture records for slot s: the MLP's kernels for samples
 * [row0, row0 + n), or with `between` those that run between reading a
 * frame in place and writing its result (pp_gpu_mlp_run_between). */
typedef struct {
  uint32_t row0, n;
  bool between;
} cuda_graph_part;
int cuda_capture(cuda_backend *b, cuda_slot *s, cuda_graph_part part, cudaGraphExec_t *exec,
                 char **msg);
/* Whether finish has nothing to do for the slot's current frame. */
bool cuda_slot_free(const cuda_slot *s);
/* Waits for everything queued on the slot's streams. */
void cuda_slot_sync(cuda_slot *s);
int cuda_sync(pp_backend *b);

/* ---- pinned.c ---------------------------------------------------------------- */

/* A slot's staging memory: mapped like the frames' own, then registered. */
void *cuda_staging_alloc(size_t bytes, char **msg);
void cuda_staging_free(void *ptr, size_t bytes);

/* ---- waiter.c ------------------------------------------------------------------ */

/* completion=event-thread: the thread that reports each frame. */
gpointer cuda_waiter_main(gpointer data);
/* completion=consumer: pp_backend_ops.wait. */
int cuda_wait(pp_backend *base, unsigned index, int64_t timeout_ns);
/* completion=consumer, once the streams are idle: reports every frame not
 * reported yet, in order. */
void cuda_report_pending(cuda_backend *b);

/* ---- configure.c ----------------------------------------------------------------- */

int cuda_configure(pp_backend *b, const pp_model *model, const pp_frame_layout *layout,
                   unsigned n_slots, char **msg);
/* Slot s's graphs for the kernels as now chosen (none without graphs). */
void cuda_capture_slot(cuda_backend *b, cuda_slot *s);
void cuda_free_slots(cuda_backend *b);

/* ---- chunks.c ------------------------------------------------------------------ */

/* At configure, after the kernels are chosen: the chunk count, by timing
 * frames (or PINGPONG_CUDA_CHUNKS), with every slot's chunk graphs. */
int cuda_plan_frames(cuda_backend *b, char **msg);
void cuda_drop_chunks(cuda_backend *b);
int cuda_enqueue_chunks(cuda_backend *b, cuda_slot *s, const void *src, float *dst, char **msg);

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

/* ---- weights.c ------------------------------------------------------------ */

/* Uploads the model's layers (once per model id). */
int pp_gpu_mlp_load_weights(cuda_backend *b, const pp_model *m, char **msg);
void pp_gpu_mlp_free_weights(cuda_backend *b);

/* ---- gpu_mlp.c ------------------------------------------------------------ */

const char *cuda_path_name(pp_cuda_path path);

/* Enqueues the MLP of slot `s`'s frame on `stream`: every GEMM layer on
 * `force` (own, own64, cublas; fused or small for the whole MLP), or PP_N_PATHS for
 * the tuned choice. */
int pp_gpu_mlp_run(cuda_backend *b, cuda_slot *s, pp_cuda_path force, cudaStream_t stream,
                   char **msg);
/* The same for samples [row0, row0 + n) only: the whole frame, or a chunk
 * that starts at a whole row of samples and has chunk_rows of them. */
int pp_gpu_mlp_run_rows(cuda_backend *b, cuda_slot *s, pp_cuda_path force, cudaStream_t stream,
                        uint32_t row0, uint32_t n, char **msg);
/* Whether one kernel runs the whole MLP (fused or small). */
bool pp_gpu_mlp_is_whole(const cuda_backend *b);
/* Whether a frame read in place, layer by layer, has kernels between its
 * reader and the last layer that a graph can hold (slot.between_exec),
 * and those kernels, on the floats of the slot's conversion. */
bool pp_gpu_mlp_has_between(const cuda_backend *b);
int pp_gpu_mlp_run_between(cuda_backend *b, cuda_slot *s, cudaStream_t stream, char **msg);
/* The MLP of `frame` (pinned and mapped host memory, or the device) with
 * its results to `out` (likewise): zero-copy. A whole-MLP kernel reads
 * the frame and writes the results; layer by layer, the first layer reads
 * the frame (our GEMM, or the conversion before cuBLAS) and the last
 * writes the results, the layers between on the device as ever. */
int pp_gpu_mlp_run_in_place(cuda_backend *b, cuda_slot *s, const void *frame, float *out,
                            cudaStream_t stream, char **msg);
/* Whether a frame read in place can raise its own done signal: one kernel
 * does the whole frame. */
bool pp_gpu_mlp_can_signal(const cuda_backend *b);
/* Layer i alone on the whole frame; where layer i reads its first n rows
 * on `path` (cublas: as floats, split: as TF32 pieces, converting the
 * frame's bytes first). For mlp_plan.c. */
int pp_gpu_mlp_run_layer(cuda_backend *b, cuda_slot *s, unsigned i, pp_cuda_path path,
                         cudaStream_t stream, char **msg);
int pp_gpu_mlp_layer_input(cuda_backend *b, cuda_slot *s, unsigned i, pp_cuda_path path, uint32_t n,
                           cudaStream_t stream, const void **x, char **msg);

/* ---- split.c ------------------------------------------------------------ */

/* Whether layer 0 reads the frame's bytes, so the split path can take it. */
bool cuda_split_fits(const cuda_backend *b);
/* TF32 pieces of W: 2 for FP32, 1 for TF32. */
unsigned cuda_split_pieces(const cuda_backend *b);
/* Elements in a row of the split X and W: pieces × the padded K. */
uint32_t cuda_split_row(const cuda_backend *b);
/* Layer 0's split weights and bias, for slot 0's frame's scale and bias. */
int cuda_split_weights(cuda_backend *b, char **msg);
void cuda_split_free(cuda_backend *b);

/* ---- mlp_plan.c ------------------------------------------------------------ */

/* cuBLASLt plans for chunks of `rows` samples, for the layers that run on
 * cuBLAS (after pp_gpu_mlp_plan). */
int pp_gpu_mlp_plan_chunks(cuda_backend *b, uint32_t rows, char **msg);
void pp_gpu_mlp_unplan_chunks(cuda_backend *b);

/* After the slots exist and slot 0 holds a frame: plans cuBLASLt for each
 * layer, then picks each layer's kernels by timing them on slot 0 (or as
 * PINGPONG_CUDA_PATH says), and a whole-MLP kernel where one wins. */
int pp_gpu_mlp_plan(cuda_backend *b, char **msg);
void pp_gpu_mlp_unplan(cuda_backend *b);

/* "own+cublas+rowdot", "fused" or "small/4": the chosen kernels. */
void pp_gpu_mlp_describe(const cuda_backend *b, char *text, size_t size);

/* Median MLP time with every layer on each path (negative where it does
 * not fit). */
int pp_gpu_mlp_time_paths(cuda_backend *b, unsigned reps, double us[PP_N_PATHS], char **msg);

#endif
