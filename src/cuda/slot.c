/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* One slot's GPU resources: streams, events, staging and graphs, made and
 * freed. */
#include "slot.h"

#include <errno.h>
#include <glib.h>
#include <string.h>

#include "check.h"
#include "log.h"
#include "lt_table.h"
#include "pinned.h"

int
pp_cuda_slot_alloc(pp_cuda_slot *s, unsigned index, const pp_mlp_exec *e, const pp_gpu_weights *w,
                   const pp_frame_layout *layout, size_t out_bytes, bool workspace, char **msg)
{
  memset(s, 0, sizeof *s);
  s->index = index;
  s->frame_bytes = layout->frame_bytes;
  s->out_bytes = out_bytes;
  CUDA_CHECK(cudaStreamCreateWithFlags(&s->stream, cudaStreamNonBlocking));
  CUDA_CHECK(cudaStreamCreateWithFlags(&s->compute, cudaStreamNonBlocking));
  CUDA_CHECK(cudaStreamCreateWithFlags(&s->copy_out, cudaStreamNonBlocking));
  for (unsigned j = 0; j < PP_MAX_CHUNKS; j++) {
    CUDA_CHECK(cudaEventCreateWithFlags(&s->ev_in[j], cudaEventDisableTiming));
    CUDA_CHECK(cudaEventCreateWithFlags(&s->ev_out[j], cudaEventDisableTiming));
  }
  cudaEvent_t *timing[] = { &s->ev_start, &s->ev_h2d, &s->ev_mlp, &s->ev_d2h };
  for (size_t i = 0; i < G_N_ELEMENTS(timing); i++)
    CUDA_CHECK(cudaEventCreate(timing[i]));
  /* The completion waiter sleeps rather than spins on its event. */
  CUDA_CHECK(cudaEventCreateWithFlags(&s->ev_done, cudaEventDisableTiming | cudaEventBlockingSync));
  if (!(s->staging_in = pp_pinned_staging_alloc(s->frame_bytes, msg)) ||
      !(s->staging_out = pp_pinned_staging_alloc(out_bytes, msg)))
    return -ENOMEM;
  CUDA_CHECK(cudaMalloc(&s->d_in, s->frame_bytes));
  s->buf.x = pp_mlp_exec_reader(e, s->d_in);
  const size_t scratch = pp_mlp_exec_scratch_bytes(e, NULL);
  if (scratch)
    CUDA_CHECK(cudaMalloc(&s->buf.d_x, scratch));
  s->scratch_bytes = scratch;
  for (unsigned i = 0; i < 2 && i + 1 < w->n_layers; i++)
    CUDA_CHECK(cudaMalloc(&s->buf.d_h[i], pp_mlp_exec_hidden_bytes(e)));
  CUDA_CHECK(cudaMalloc((void **) &s->buf.d_out, out_bytes));
  if (workspace)
    CUDA_CHECK(cudaMalloc(&s->buf.workspace, PP_LT_WORKSPACE_BYTES));
  CUDA_CHECK(cudaHostAlloc((void **) &s->done_flag, sizeof *s->done_flag, cudaHostAllocMapped));
  *s->done_flag = 0;
  CUDA_CHECK(cudaHostGetDevicePointer((void **) &s->buf.d_done_flag, (void *) s->done_flag, 0));
  CUDA_CHECK(cudaMalloc((void **) &s->buf.d_done_count, sizeof *s->buf.d_done_count));
  CUDA_CHECK(cudaMemsetAsync(s->buf.d_done_count, 0, sizeof *s->buf.d_done_count, s->stream));
  return 0;
}

int
pp_cuda_slot_fit_scratch(pp_cuda_slot *s, size_t bytes, char **msg)
{
  if (bytes == s->scratch_bytes)
    return 0;
  CUDA_CHECK(cudaStreamSynchronize(s->stream));
  cudaFree(s->buf.d_x);
  s->buf.d_x = NULL;
  s->scratch_bytes = 0;
  if (bytes)
    CUDA_CHECK(cudaMalloc(&s->buf.d_x, bytes));
  s->scratch_bytes = bytes;
  return 0;
}

int
pp_cuda_slot_fit_workspace(pp_cuda_slot *s, bool want, char **msg)
{
  if (want == (s->buf.workspace != NULL))
    return 0;
  if (want) {
    CUDA_CHECK(cudaMalloc(&s->buf.workspace, PP_LT_WORKSPACE_BYTES));
    return 0;
  }
  CUDA_CHECK(cudaStreamSynchronize(s->stream));
  cudaFree(s->buf.workspace);
  s->buf.workspace = NULL;
  return 0;
}

void
pp_cuda_slot_drop_graphs(pp_cuda_slot *s)
{
  cudaGraphExec_t *graphs[2 + PP_MAX_CHUNKS] = { &s->exec, &s->between };
  for (unsigned j = 0; j < PP_MAX_CHUNKS; j++)
    graphs[2 + j] = &s->chunk[j];
  for (size_t i = 0; i < G_N_ELEMENTS(graphs); i++) {
    if (*graphs[i])
      cudaGraphExecDestroy(*graphs[i]);
    *graphs[i] = NULL;
  }
}

void
pp_cuda_slot_free(pp_cuda_slot *s)
{
  pp_cuda_slot_drop_graphs(s);
  cudaStream_t streams[] = { s->stream, s->compute, s->copy_out };
  for (size_t i = 0; i < G_N_ELEMENTS(streams); i++)
    if (streams[i])
      cudaStreamDestroy(streams[i]);
  cudaEvent_t events[] = { s->ev_start, s->ev_h2d, s->ev_mlp, s->ev_d2h, s->ev_done };
  for (size_t i = 0; i < G_N_ELEMENTS(events); i++)
    if (events[i])
      cudaEventDestroy(events[i]);
  for (unsigned j = 0; j < PP_MAX_CHUNKS; j++) {
    if (s->ev_in[j])
      cudaEventDestroy(s->ev_in[j]);
    if (s->ev_out[j])
      cudaEventDestroy(s->ev_out[j]);
  }
  cudaFree(s->d_in);
  cudaFree(s->buf.d_x);
  cudaFree(s->buf.d_h[0]);
  cudaFree(s->buf.d_h[1]);
  cudaFree(s->buf.d_out);
  cudaFree(s->buf.workspace);
  cudaFree(s->buf.d_done_count);
  if (s->done_flag)
    cudaFreeHost((void *) s->done_flag);
  pp_pinned_staging_free(s->staging_in, s->frame_bytes);
  pp_pinned_staging_free(s->staging_out, s->out_bytes);
  memset(s, 0, sizeof *s);
}

/* What one graph holds: samples [row0, row0 + n), or (between) the middle
 * of a frame read in place. */
typedef struct {
  uint32_t row0, n;
  bool between;
} graph_part;

/* A capture is invalidated by another thread synchronizing the whole
 * context while it is open: NVDEC's decoder calls cuCtxSynchronize for
 * every frame in the pipeline's context, which we share to read its frames.
 * Such a capture is made again, after a pause that grows each time. */
#define CAPTURE_TRIES 20
#define CAPTURE_PAUSE_US 200

static int
capture_once(pp_cuda_slot *s, const pp_mlp_exec *e, const pp_cuda_plan *plan, graph_part part,
             cudaGraphExec_t *exec, char **msg)
{
  cudaGraph_t graph = NULL;
  CUDA_CHECK(cudaStreamBeginCapture(s->stream, cudaStreamCaptureModeThreadLocal));
  char *reason = NULL;
  const pp_mlp_rows rows = { part.row0, part.n, NULL, NULL, 0 };
  const int rc = part.between ? pp_mlp_exec_run_between(e, plan, &s->buf, s->stream, &reason)
                              : pp_mlp_exec_run(e, plan, &s->buf, &rows, s->stream, &reason);
  const cudaError_t end = cudaStreamEndCapture(s->stream, &graph);
  if (end == cudaErrorStreamCaptureInvalidated) {
    if (graph)
      cudaGraphDestroy(graph);
    cudaGetLastError();
    g_free(reason);
    return -EAGAIN;
  }
  if (rc < 0) {
    if (graph)
      cudaGraphDestroy(graph);
    *msg = reason;
    return rc;
  }
  g_free(reason);
  CUDA_CHECK(end);
  const cudaError_t err = cudaGraphInstantiate(exec, graph, 0);
  cudaGraphDestroy(graph);
  if (err != cudaSuccess) {
    *exec = NULL;
    return pp_cuda_fail(msg, "cudaGraphInstantiate", err, __FILE__, __LINE__);
  }
  return 0;
}

static int
capture(pp_cuda_slot *s, const pp_mlp_exec *e, const pp_cuda_plan *plan, graph_part part,
        cudaGraphExec_t *exec, char **msg)
{
  for (int tries = 1;; tries++) {
    const int rc = capture_once(s, e, plan, part, exec, msg);
    if (rc != -EAGAIN)
      return rc;
    if (tries == CAPTURE_TRIES) {
      *msg =
          g_strdup_printf("capturing the MLP's CUDA graph was invalidated %d times in a row by "
                          "another thread synchronizing the CUDA context; set plan=\"graphs=off\"",
                          tries);
      return -EIO;
    }
    pp_log(PP_LOG_DEBUG, "cuda", "a graph capture was invalidated by another thread (try %d)",
           tries);
    g_usleep(CAPTURE_PAUSE_US * tries);
  }
}

int
pp_cuda_slot_capture(pp_cuda_slot *s, const pp_mlp_exec *e, const pp_cuda_plan *plan, uint32_t n,
                     char **why)
{
  pp_cuda_slot_drop_graphs(s);
  if (!plan->graphs)
    return 0;
  int rc = capture(s, e, plan, (graph_part){ 0, n, false }, &s->exec, why);
  if (rc == 0 && pp_mlp_exec_has_between(e, plan))
    rc = capture(s, e, plan, (graph_part){ 0, 0, true }, &s->between, why);
  const unsigned chunks = plan->frames == PP_FRAMES_CHUNKS ? plan->chunks : 0;
  for (unsigned j = 0; j < chunks && rc == 0; j++)
    rc =
        capture(s, e, plan, (graph_part){ j * (n / chunks), n / chunks, false }, &s->chunk[j], why);
  if (rc < 0)
    pp_cuda_slot_drop_graphs(s);
  return rc;
}

void
pp_cuda_slot_sync(pp_cuda_slot *s)
{
  cudaStream_t streams[] = { s->stream, s->compute, s->copy_out };
  for (size_t i = 0; i < G_N_ELEMENTS(streams); i++)
    if (streams[i])
      cudaStreamSynchronize(streams[i]);
}
