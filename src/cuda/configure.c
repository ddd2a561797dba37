/* Configuring the CUDA backend for a model and a frame layout: each slot's
 * streams, events, pinned staging and device buffers, then the kernels
 * (gpu_mlp.c), each slot's graph of them, and how frames cross
 * (chunks.c). Only while no frame is in flight. */
#include <errno.h>
#include <string.h>

#include "backend_cuda_priv.h"
#include "stats.h"

static void
drop_graph(cuda_slot *s)
{
  if (s->exec)
    cudaGraphExecDestroy(s->exec);
  if (s->between_exec)
    cudaGraphExecDestroy(s->between_exec);
  s->exec = s->between_exec = NULL;
}

static void
free_slot(cuda_slot *s, size_t frame_bytes, size_t out_bytes)
{
  drop_graph(s);
  cudaStream_t streams[] = { s->stream, s->compute, s->copy_out };
  for (size_t i = 0; i < G_N_ELEMENTS(streams); i++)
    if (streams[i])
      cudaStreamDestroy(streams[i]);
  cudaEvent_t *events[] = { &s->ev_start, &s->ev_h2d, &s->ev_mlp, &s->ev_d2h, &s->ev_done };
  for (size_t i = 0; i < G_N_ELEMENTS(events); i++)
    if (*events[i])
      cudaEventDestroy(*events[i]);
  for (unsigned j = 0; j < PP_MAX_CHUNKS; j++) {
    if (s->ev_in[j])
      cudaEventDestroy(s->ev_in[j]);
    if (s->ev_out[j])
      cudaEventDestroy(s->ev_out[j]);
  }
  cudaFree(s->d_in);
  cudaFree(s->d_x);
  cudaFree(s->d_h[0]);
  cudaFree(s->d_h[1]);
  cudaFree(s->d_out);
  cudaFree(s->workspace);
  cudaFree(s->d_done_count);
  if (s->done_flag)
    cudaFreeHost((void *) s->done_flag);
  cuda_staging_free(s->staging_in, frame_bytes);
  cuda_staging_free(s->staging_out, out_bytes);
  memset(s, 0, sizeof *s);
}

void
cuda_free_slots(cuda_backend *b)
{
  cuda_drop_chunks(b);
  for (unsigned i = 0; i < b->n_slots; i++)
    free_slot(&b->slots[i], b->layout.frame_bytes, b->out_bytes);
  b->n_slots = 0;
  pp_gpu_mlp_unplan(b);
  cudaFree(b->d_koff);
  g_free(b->h_koff);
  b->d_koff = NULL;
  b->h_koff = NULL;
}

static int
alloc_slot(cuda_backend *b, cuda_slot *s, unsigned index, char **msg)
{
  const pp_frame_layout *l = &b->layout;
  s->owner = b;
  s->index = index;
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
  if (!(s->staging_in = cuda_staging_alloc(l->frame_bytes, msg)) ||
      !(s->staging_out = cuda_staging_alloc(b->out_bytes, msg)))
    return -ENOMEM;
  CUDA_CHECK(cudaMalloc(&s->d_in, l->frame_bytes));
  s->x = pp_cuda_a_for_layout(l, b->h_koff, s->d_in, b->d_koff);
  if (l->kind != PP_LAYOUT_TENSOR) {
    /* Room for the frame as floats (cublas) or as TF32 pieces (split). */
    size_t row = l->k * sizeof(float);
    if (s->x.kind == PP_A_U8_VEC4 || s->x.kind == PP_A_U8_GATHER)
      row = MAX(row, cuda_split_row(b) * sizeof(float));
    CUDA_CHECK(cudaMalloc(&s->d_x, l->n * row));
  }
  for (unsigned i = 0; i < 2 && i + 1 < b->n_layers; i++) {
    CUDA_CHECK(cudaMalloc((void **) &s->d_h[i], (size_t) l->n * b->ldh * sizeof(float)));
    s->h[i] = (pp_cuda_a){ .kind = PP_A_F32, .data = s->d_h[i], .ld = b->ldh };
  }
  CUDA_CHECK(cudaMalloc((void **) &s->d_out, b->out_bytes));
  CUDA_CHECK(cudaMalloc(&s->workspace, LT_WORKSPACE_BYTES));
  CUDA_CHECK(cudaHostAlloc((void **) &s->done_flag, sizeof *s->done_flag, cudaHostAllocMapped));
  *s->done_flag = 0;
  CUDA_CHECK(cudaHostGetDevicePointer((void **) &s->d_done_flag, (void *) s->done_flag, 0));
  CUDA_CHECK(cudaMalloc((void **) &s->d_done_count, sizeof *s->d_done_count));
  CUDA_CHECK(cudaMemsetAsync(s->d_done_count, 0, sizeof *s->d_done_count, s->stream));
  return 0;
}

/* Random frame bytes in slot 0, so timing never runs on zeros. */
static int
fill_random_frame(cuda_backend *b, char **msg)
{
  cuda_slot *s = &b->slots[0];
  GRand *rng = g_rand_new_with_seed(2026);
  if (b->layout.kind == PP_LAYOUT_TENSOR) {
    float *f = s->staging_in;
    for (size_t i = 0; i < b->layout.frame_bytes / sizeof(float); i++)
      f[i] = (float) g_rand_double_range(rng, -1, 1);
  } else {
    uint8_t *bytes = s->staging_in;
    for (size_t i = 0; i < b->layout.frame_bytes; i++)
      bytes[i] = (uint8_t) g_rand_int(rng);
  }
  g_rand_free(rng);
  CUDA_CHECK(cudaMemcpyAsync(s->d_in, s->staging_in, b->layout.frame_bytes, cudaMemcpyHostToDevice,
                             s->stream));
  CUDA_CHECK(cudaStreamSynchronize(s->stream));
  return 0;
}

/* PINGPONG_CUDA_TRACE: what one frame's launch costs the CPU here, back to
 * back and with the GPU idle in between, to set against what it costs in
 * the pipeline (printed at destroy). */
static void
probe_launch_cost(cuda_backend *b)
{
  cuda_slot *s = &b->slots[0];
  for (int idle = 0; idle < 2; idle++) {
    double total = 0;
    for (int i = 0; i < 32; i++) {
      const int64_t t0 = pp_now_ns();
      cudaError_t err = s->exec ? cudaGraphLaunch(s->exec, s->stream) : cudaSuccess;
      total += (pp_now_ns() - t0) / 1000.0;
      if (err != cudaSuccess || idle)
        cudaStreamSynchronize(s->stream);
    }
    cudaStreamSynchronize(s->stream);
    g_printerr("pingpong cuda probe: graph launch %.2f µs (%s) [%s]\n", total / 32,
               idle ? "GPU idle before each" : "back to back", b->description);
  }
}

/* Slot s's kernels as a graph (and, layer by layer, those a frame read in
 * place runs between its reader and its last layer), replacing any it
 * had; a failed capture leaves the slot on direct launches, which do the
 * same work. */
void
cuda_capture_slot(cuda_backend *b, cuda_slot *s)
{
  drop_graph(s);
  if (!b->use_graphs)
    return;
  const cuda_graph_part whole = { 0, b->layout.n, false }, between = { 0, 0, true };
  char *why = NULL;
  if (cuda_capture(b, s, whole, &s->exec, &why) < 0 ||
      (pp_gpu_mlp_has_between(b) && cuda_capture(b, s, between, &s->between_exec, &why) < 0)) {
    g_warning("slot %u runs without a CUDA graph: %s", s->index, why);
    g_free(why);
    drop_graph(s);
  }
}

int
cuda_configure(pp_backend *base, const pp_model *model, const pp_frame_layout *layout,
               unsigned n_slots, char **msg)
{
  cuda_backend *b = (cuda_backend *) base;
  if (layout->k != model->k) {
    *msg = g_strdup_printf("frames give K=%u but the model takes %u", layout->k, model->k);
    return -EINVAL;
  }
  CUDA_CHECK(cuda_bind_context(b));
  cuda_sync(base);
  cuda_free_slots(b);
  int rc = 0;
  if (b->model_id != model->id && (rc = pp_gpu_mlp_load_weights(b, model, msg)) < 0)
    return rc;

  b->layout = *layout;
  b->out_bytes = (size_t) layout->n * b->o * sizeof(float);
  if (layout->kind != PP_LAYOUT_TENSOR) {
    b->h_koff = g_new(int32_t, layout->k);
    pp_cuda_k_offsets(layout, b->h_koff);
    CUDA_CHECK(cudaMalloc((void **) &b->d_koff, layout->k * sizeof(int32_t)));
    CUDA_CHECK(cudaMemcpyAsync(b->d_koff, b->h_koff, layout->k * sizeof(int32_t),
                               cudaMemcpyHostToDevice, b->setup_stream));
    CUDA_CHECK(cudaStreamSynchronize(b->setup_stream));
  }
  for (unsigned i = 0; i < n_slots; i++) {
    b->n_slots = i + 1;
    if ((rc = alloc_slot(b, &b->slots[i], i, msg)) < 0)
      goto fail;
  }
  if ((rc = fill_random_frame(b, msg)) < 0)
    goto fail;
  if ((rc = pp_gpu_mlp_plan(b, msg)) < 0)
    goto fail;
  if ((rc = cuda_anchor_clock(b, msg)) < 0)
    goto fail;

  /* Slot 0's graphs first: planning the frames times them, and may change
   * the kernels (to a whole-MLP kernel that lost on the MLP alone). */
  cuda_capture_slot(b, &b->slots[0]);
  if ((rc = cuda_plan_frames(b, msg)) < 0)
    goto fail;
  for (unsigned i = 1; i < n_slots; i++)
    cuda_capture_slot(b, &b->slots[i]);
  char kernels[96], chunks[32] = "";
  pp_gpu_mlp_describe(b, kernels, sizeof kernels);
  if (b->chunks > 1)
    g_snprintf(chunks, sizeof chunks, ", %u chunks", b->chunks);
  else if (b->zero_copy)
    g_strlcpy(chunks, ", zero-copy", sizeof chunks);
  g_snprintf(b->description, sizeof b->description, "%s%s, %s, %s%s", kernels, chunks,
             b->slots[0].x.kind == PP_A_U8_VEC4     ? "u8x4 loads"
             : b->slots[0].x.kind == PP_A_U8_GATHER ? "u8 gather"
                                                    : "f32 loads",
             b->completion == PP_COMPLETION_HOST_FUNC  ? "host-func"
             : b->completion == PP_COMPLETION_CONSUMER ? "consumer"
                                                       : "event-thread",
             b->slots[0].exec ? ", graphs" : "");
  if (b->trace)
    probe_launch_cost(b);
  return 0;

fail:
  cuda_free_slots(b);
  return rc;
}
