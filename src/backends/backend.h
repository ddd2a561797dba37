/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The interface a compute backend implements for the engine. A backend owns
 * N slots; each slot runs one frame at a time, in the order submitted to it,
 * and reports completion through `complete`. Slots run concurrently with
 * each other (CUDA: one stream each; CPU: one worker thread each).
 *
 * Threading: configure, submit and finish are called by the engine's one
 * producer or consumer thread, never concurrently for the same slot; sync and
 * destroy only when nothing else calls in. */
#ifndef PP_BACKEND_H
#define PP_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "frame_layout.h"
#include "model.h"
#include "precision.h"

/* Bumped whenever pp_backend_ops changes shape. */
#define PP_BACKEND_ABI 9
#define PP_MAX_SLOTS 16
/* Devices one backend may spread its slots over (device-id="0,1"). */
#define PP_MAX_DEVICES PP_MAX_SLOTS
/* Frames in flight per slot: one on the device, one done and waiting to be
 * pushed downstream. */
#define PP_TICKETS_PER_SLOT 2
#define PP_MAX_TICKETS (PP_MAX_SLOTS * PP_TICKETS_PER_SLOT)
/* Frames of several streams a shared backend runs as one (max-batch). */
#define PP_MAX_BATCH 16
/* ... and at most this many samples in all: past a few tens of thousands a
 * frame fills the GPU alone (hd's 32,400 samples gained nothing from pairs
 * and paid twice the device's buffers). */
#define PP_BATCH_ROWS 32768u

typedef struct pp_backend pp_backend;

/* One frame's work. `input` holds layout->frame_bytes; `output` receives
 * layout->n × model->o floats. `*_pinned` says the memory is page-locked and
 * registered with the backend, so a DMA engine may use it in place; otherwise
 * the backend stages through memory of its own. Both stay valid until the
 * slot's completion has been popped. */
typedef struct pp_job_s {
  const void *input;
  bool input_pinned;
  float *output;
  bool output_pinned;
  /* The frame is in device memory of the backend's CUDA context instead
   * (`input` unused): layout plane i starts at device_planes[i], rows
   * device_pitch[i] bytes apart. The backend reads it with no host copy. */
  bool input_on_device;
  const void *device_planes[PP_MAX_PLANES];
  size_t device_pitch[PP_MAX_PLANES];
  /* A batch instead (n_batch > 0, only to a backend configured with
   * pp_plan_request.batch > 1): n_batch frames, each a job of its own
   * above, run as one over their samples back to back. `batch` stays valid
   * as the frames' memory does. */
  const struct pp_job_s *batch;
  unsigned n_batch;
} pp_job;

/* Time each stage of one frame took on the device, in microseconds; negative
 * where the backend does not measure it. Where it can tell, also when each
 * began on the host's clock (pp_now_ns), for traces; 0 where unknown. */
typedef struct {
  double h2d_us, mlp_us, d2h_us;
  int64_t h2d_start_ns, mlp_start_ns, d2h_start_ns;
} pp_stage_times;

/* Called from any backend thread once a slot's work is done (or failed with
 * a negative errno and a message). `slot_free`: nothing is left for finish
 * to do, so the slot may take the next frame at once; otherwise it stays
 * taken until the frame has been popped and finished. Must return quickly
 * and call nothing back into the backend; for CUDA it runs inside a stream
 * callback. */
typedef void (*pp_complete_fn)(void *data, unsigned slot, int status, const char *message,
                               bool slot_free);

typedef enum {
  PP_COMPLETION_EVENT_THREAD, /* a thread waiting on each frame's completion event */
  PP_COMPLETION_CONSUMER,     /* the consumer waits on the event itself, before it pops */
  PP_COMPLETION_AUTO,         /* consumer (pp_completion_resolve) */
} pp_completion;

/* What configure is told of its plan (a backend's choices for a model, a
 * frame layout and a slot count: the CUDA backend's kernels and how frames
 * cross, cuda_plan.h). */
typedef struct {
  /* A plan line, or part of one, to run: the backend chooses the rest. */
  const char *forced;
  /* A whole line read back from the plan cache: used if it still fits
   * (else the backend tunes, and plan_info says why). */
  const char *cached;
  /* Choose by timing each candidate once (compute-sanitizer runs). */
  bool quick;
  /* Capture no CUDA graph: another user of the CUDA context (the decoder
   * that writes the frames) synchronizes the whole context, which breaks a
   * capture open at that moment, and the driver has crashed in that race.
   * A plan that forces graphs=on keeps them. */
  bool no_graphs;
  /* Frames a job may hold (a shared backend's batches): 1 (or 0) for one.
   * With more, `layout` is still one frame's; the backend runs up to this
   * many, back to back (pp_frame_layout_stack, which must take them), and
   * plans for the full batch. */
  unsigned batch;
} pp_plan_request;

typedef enum {
  PP_PLAN_TUNED,  /* chosen by timing candidates */
  PP_PLAN_CACHED, /* read back from the cache */
  PP_PLAN_FORCED, /* given (the rest, if any, tuned) */
} pp_plan_source;

const char *pp_plan_source_name(pp_plan_source source);

/* What starting took, in milliseconds: opening the device and its context,
 * loading libraries on demand, allocating the slots, uploading weights,
 * making the plan (the planner's timing, or checking a cached plan), and
 * capturing graphs; configure_ms is all of configure. */
typedef struct {
  double open_ms, library_ms, alloc_ms, weights_ms, plan_ms, graphs_ms, configure_ms;
} pp_startup_times;

typedef struct {
  const char *line; /* the plan in use; valid until the next configure */
  pp_plan_source source;
  const char *refused; /* why the cached line was not used, or NULL */
  pp_startup_times startup;
  bool blas; /* the plan runs layers on cuBLASLt, which it loaded */
} pp_plan_info;

typedef struct {
  uint32_t abi; /* PP_BACKEND_ABI */
  const char *name;
  /* (Re)allocates per-slot resources, uploads the weights and makes the
   * plan (`request` may be NULL: tune); only while idle. */
  int (*configure)(pp_backend *b, const pp_model *model, const pp_frame_layout *layout,
                   unsigned n_slots, const pp_plan_request *request, char **msg);
  /* Enqueues the job on the slot and returns without waiting for it. */
  int (*submit)(pp_backend *b, unsigned slot, const pp_job *job, char **msg);
  /* On the consumer thread, for a frame whose completion did not free its
   * slot: copies a staged output out and reads the stage times. Optional. */
  int (*finish)(pp_backend *b, unsigned slot, const pp_job *job, pp_stage_times *times);
  /* Waits until every submitted job has completed and been reported. */
  int (*sync)(pp_backend *b);
  void (*destroy)(pp_backend *b);
  /* Optional: called when a slot's completion is long overdue; returns a
   * negative errno and a message if the slot's work has failed, so an error
   * that keeps the completion from ever arriving still comes out. */
  int (*poll)(pp_backend *b, unsigned slot, char **msg);
  /* Optional: how the backend runs frames (kernels chosen, completion), for
   * logs and stats. Valid until the next configure. */
  const char *(*describe)(pp_backend *b);
  /* Optional, for backends that have no thread of their own to report
   * completions (completion=consumer): on the consumer's thread, waits at
   * most `timeout_ns` for the slot's submitted frame and reports it through
   * `complete` before returning 0; -EAGAIN if it is still running. A frame
   * some other caller (sync) reported already also returns 0. */
  int (*wait)(pp_backend *b, unsigned slot, int64_t timeout_ns);
  /* Optional: makes the calling thread's next calls into the backend run
   * warm, a frame being due shortly; the engine's consumer calls it when it
   * wakes to watch for a paced frame (engine_paced.c). */
  void (*warm)(pp_backend *b);
  /* Optional: the plan configure made, and what starting took. */
  void (*plan_info)(pp_backend *b, pp_plan_info *info);
  /* Optional: what the right plan depends on here beyond the model, the
   * layout and the slots (the GPU, the driver, library versions), for the
   * plan cache's key; NULL or absent: plans are not cached. */
  const char *(*plan_key)(pp_backend *b);
  /* Optional: how many streams run on this backend now (the lanes of a
   * shared one, backend_shared.h); absent: one. */
  unsigned (*streams)(pp_backend *b);
  /* Optional: jobs run since configure and the frames they held, for a
   * backend that runs frames in batches (a shared one's lanes); absent:
   * a job a frame. */
  void (*batching)(pp_backend *b, uint64_t *jobs, uint64_t *frames);
} pp_backend_ops;

struct pp_backend {
  const pp_backend_ops *ops;
  pp_complete_fn complete;
  void *complete_data;
  /* Frames whose input had to be copied into staging memory first; read
   * with __atomic loads from other threads. */
  uint64_t staged_inputs;
  /* Frames read from device memory (no host-to-device copy), likewise. */
  uint64_t device_inputs;
};

typedef enum {
  PP_BACKEND_AUTO,
  PP_BACKEND_CUDA,
  PP_BACKEND_CPU,
} pp_backend_kind;

/* What PP_COMPLETION_AUTO means: the one place it is decided. Backends
 * are only ever given the result. */
pp_completion pp_completion_resolve(pp_completion completion);

typedef struct {
  pp_backend_kind kind;
  /* The device a single backend runs on. */
  int device_id;
  /* More than one device: slot i runs on devices[i % n_devices], each with
   * its own backend and copy of the weights (pp_backend_open). 0: device_id
   * alone. `all_devices`: every visible CUDA device (one on the CPU). */
  unsigned n_devices;
  int devices[PP_MAX_DEVICES];
  bool all_devices;
  pp_precision precision;
  pp_completion completion;
  /* A shared backend's lanes: frames of several streams run as one, up to
   * this many (and PP_BATCH_ROWS samples); 0 or 1: one at a time. */
  unsigned max_batch;
  /* Time every frame's stages, not one in several (for traces). */
  bool time_every_frame;
  /* A CUcontext (CUDA driver API) to run in instead of the device's primary
   * context: the one a GStreamer pipeline shares, so that device memory from
   * its other elements can be read. NULL: the primary context. */
  void *cuda_context;
  /* The CPU backend reports frame fail_frame - 1 (counted from 0 since
   * configure) as failed, for tests of the error paths (debug_env.h); 0:
   * never. */
  uint64_t fail_frame;
} pp_backend_options;

/* Opens the backend `opts->kind` asks for. AUTO takes CUDA when a device is
 * usable and otherwise the CPU, putting the reason in *note (may be NULL).
 * With several devices, one backend of that kind per device, behind
 * pp_backend_multi_new. The result reports completions to `complete`. */
int pp_backend_open(const pp_backend_options *opts, pp_complete_fn complete, void *data,
                    pp_backend **out, char **note, char **msg);

/* Parses a device list: "0", "0,1,3" or "-1" (every visible device) into
 * opts->devices, n_devices and all_devices, and device_id (the first). */
int pp_backend_parse_devices(const char *text, pp_backend_options *opts, char **msg);
/* The list as pp_backend_parse_devices reads it; g_free the result. */
char *pp_backend_format_devices(const pp_backend_options *opts);
/* Visible CUDA devices (0 without the CUDA module or a driver). */
int pp_backend_count_devices(void);
/* Replaces all_devices by the list of every visible device (device 0 alone
 * where none is visible, for the CPU). */
void pp_backend_resolve_devices(pp_backend_options *opts);
/* The device slot `slot` of n runs on. */
int pp_backend_slot_device(const pp_backend_options *opts, unsigned slot);

/* One backend over several: slot i is slot i / n of parts[i % n]. Takes
 * ownership of the parts, which must be unconfigured and report to nobody
 * yet; `labels` name them in describe ("device 1"). */
int pp_backend_multi_new(pp_backend **parts, const int *labels, unsigned n, pp_backend **out,
                         char **msg);
/* Part `index`'s plan line in the line of a backend spread over several
 * devices (its parts' lines joined device by device); a single backend's
 * line is its only part. NULL past the last part; g_free it. */
char *pp_backend_plan_part(const char *line, unsigned index);

/* True when this build has the CUDA backend. */
bool pp_backend_have_cuda(void);

int pp_backend_cpu_new(const pp_backend_options *opts, pp_backend **out, char **msg);
int pp_backend_cuda_new(const pp_backend_options *opts, pp_backend **out, char **msg);

/* Host memory for frames: page-aligned, and with `pinned`, page-locked and
 * registered with CUDA so copies to and from the GPU run at full speed
 * without staging. Anonymous memory pinned with cudaHostRegister, so io_uring
 * may register it as fixed buffers too. */
void *pp_host_alloc(size_t size, bool pinned, char **msg);
void pp_host_free(void *ptr, size_t size, bool pinned);

#endif
