/* One frame's own stages overlapped. A frame's samples are independent, so
 * the frame splits into C chunks of whole sample rows, and each slot runs
 * them on three streams ordered by events:
 *
 *   copy-in  (the slot's stream)  H2D 0 | H2D 1 | H2D 2
 *   compute                               MLP 0 | MLP 1 | MLP 2
 *   copy-out                                      D2H 0 | D2H 1 | D2H 2
 *
 * A frame then takes about its slowest stage plus one chunk of the others,
 * instead of their sum. Each chunk's kernels are a CUDA graph of their own.
 *
 * A small frame may instead be read in place (zero-copy): the first kernel
 * reads the pinned frame over the bus and the last writes the results back
 * the same way (one kernel for a whole-MLP path), so a frame has no copies,
 * each of which costs a few µs of latency however small it is.
 *
 * The arrangement is chosen at configure by timing whole frames, submit to
 * done, on the real shapes: whole, zero-copy or C chunks, whichever is
 * fastest by CHUNK_GAIN, or as PINGPONG_CUDA_CHUNKS / PINGPONG_CUDA_ZERO_COPY
 * say; and with it, between a chain of layers and a whole-MLP kernel that
 * lost to it on the MLP alone. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "backend_cuda_priv.h"
#include "stats.h"

#define CHUNK_REPS 15
/* Chunks or zero-copy must beat a whole frame by this much to be used:
 * less is noise. */
#define CHUNK_GAIN 0.95

static const unsigned chunk_choices[] = { 2, 3, 4, 5, 6, 8, 9, 10, 12, 15, 16 };
/* Chunks, and reading frames over 1 MiB in place, are for latency: with at
 * most two slots they gave more frames/s too, with three or more slots
 * whole frames by DMA gave more, as frames of different slots already
 * overlap (H100, saturated, docs/PERFORMANCE.md: hd with 3 slots 7504
 * frames/s in place and 7562 in chunks against 8411 whole; with one or two
 * slots in place gave 5751 and 7507 against 4313 and 7173 in chunks, and a
 * paced frame 177 µs against 231). A kernel that reads a large frame over
 * the bus holds its SMs while it waits. */
#define ZERO_COPY_MAX_BYTES (1u << 20)
#define LATENCY_PLANS_MAX_SLOTS 2
/* Layer by layer, a frame read in place keeps the first layer's SMs
 * waiting on the bus for as long as a copy would take the copy engine
 * (seed: the conversion 28.7 µs in place against 23.5 + 8.0 by copy and on
 * the device), which another slot's GEMM needs: seed saturated at 2 slots
 * gave 11.0-11.7k frames/s in place against 14.3-15.0k by copy, for 6 µs
 * less paced latency (H100, docs/PERFORMANCE.md). So it is for one slot
 * only, where no other frame wants those SMs. */
#define IN_PLACE_LAYERS_MAX_SLOTS 1

/* Samples per row of samples: a chunk starts at a whole one. */
static uint32_t
samples_per_row(const cuda_backend *b)
{
  const pp_cuda_a *x = &b->slots[0].x;
  return x->kind == PP_A_F32 ? 1 : x->per_row;
}

/* Whether the frame splits into `c` chunks of equal whole sample rows, each
 * a contiguous byte range: frames of one plane, and not YUV (whose kernels
 * address pixels, not bytes). */
static bool
chunks_fit(const cuda_backend *b, unsigned c)
{
  const pp_frame_layout *l = &b->layout;
  const uint32_t per_row = samples_per_row(b);
  if (c < 2 || c > PP_MAX_CHUNKS || l->is_yuv || l->n_planes > 1 || l->n % per_row != 0)
    return false;
  return (l->n / per_row) % c == 0;
}

/* Chunk j's bytes of the frame start at chunk_offset[j]; the last runs to
 * the end of the frame, so bytes no sample reads still cross. */
static void
set_offsets(cuda_backend *b, unsigned c)
{
  const pp_cuda_a *x = &b->slots[0].x;
  const uint32_t rows = b->layout.n / c;
  for (unsigned j = 0; j < c; j++) {
    const size_t row0 = (size_t) j * rows;
    b->chunk_offset[j] =
        x->kind == PP_A_F32 ? row0 * x->ld * sizeof(float) : row0 / x->per_row * x->row_step;
  }
  b->chunk_offset[c] = b->layout.frame_bytes;
  b->chunks = c;
}

static void
drop_chunk_graphs(cuda_slot *s)
{
  for (unsigned j = 0; j < PP_MAX_CHUNKS; j++) {
    if (s->chunk_exec[j])
      cudaGraphExecDestroy(s->chunk_exec[j]);
    s->chunk_exec[j] = NULL;
  }
}

static int
capture_chunk_graphs(cuda_backend *b, cuda_slot *s, char **msg)
{
  if (!b->use_graphs)
    return 0;
  for (unsigned j = 0; j < b->chunks; j++) {
    const cuda_graph_part chunk = { j * b->chunk_rows, b->chunk_rows, false };
    const int rc = cuda_capture(b, s, chunk, &s->chunk_exec[j], msg);
    if (rc < 0)
      return rc;
  }
  return 0;
}

static cudaError_t
mark(cuda_slot *s, cudaEvent_t event, cudaStream_t stream)
{
  return s->timed ? cudaEventRecord(event, stream) : cudaSuccess;
}

static int
enqueue_chunk_mlp(cuda_backend *b, cuda_slot *s, unsigned j, char **msg)
{
  if (s->chunk_exec[j]) {
    CUDA_CHECK(cudaGraphLaunch(s->chunk_exec[j], s->compute));
    return 0;
  }
  return pp_gpu_mlp_run_rows(b, s, PP_N_PATHS, s->compute, j * b->chunk_rows, b->chunk_rows, msg);
}

/* Every upload first: the copy engine is the critical path of the frames
 * that chunks help, and the MLP launches overlap the first chunk's copy. */
int
cuda_enqueue_chunks(cuda_backend *b, cuda_slot *s, const void *src, float *dst, char **msg)
{
  const size_t out_floats = (size_t) b->chunk_rows * b->o;
  CUDA_CHECK(mark(s, s->ev_start, s->stream));
  for (unsigned j = 0; j < b->chunks; j++) {
    const size_t at = b->chunk_offset[j], bytes = b->chunk_offset[j + 1] - at;
    CUDA_CHECK(cudaMemcpyAsync((uint8_t *) s->d_in + at, (const uint8_t *) src + at, bytes,
                               cudaMemcpyHostToDevice, s->stream));
    CUDA_CHECK(cudaEventRecord(s->ev_in[j], s->stream));
  }
  CUDA_CHECK(mark(s, s->ev_h2d, s->stream));
  for (unsigned j = 0; j < b->chunks; j++) {
    CUDA_CHECK(cudaStreamWaitEvent(s->compute, s->ev_in[j], 0));
    const int rc = enqueue_chunk_mlp(b, s, j, msg);
    if (rc < 0)
      return rc;
    CUDA_CHECK(cudaEventRecord(s->ev_out[j], s->compute));
  }
  CUDA_CHECK(mark(s, s->ev_mlp, s->compute));
  for (unsigned j = 0; j < b->chunks; j++) {
    CUDA_CHECK(cudaStreamWaitEvent(s->copy_out, s->ev_out[j], 0));
    CUDA_CHECK(cudaMemcpyAsync(dst + j * out_floats, s->d_out + j * out_floats,
                               out_floats * sizeof(float), cudaMemcpyDeviceToHost, s->copy_out));
  }
  CUDA_CHECK(mark(s, s->ev_d2h, s->copy_out));
  return 0;
}

/* Median time, submit to done, of a frame from slot 0's staging memory
 * with the current chunk count: what a frame's latency is made of. */
static int
time_frames(cuda_backend *b, double *us, char **msg)
{
  cuda_slot *s = &b->slots[0];
  double samples[CHUNK_REPS];
  const unsigned reps = b->quick_tune ? 1 : CHUNK_REPS, warm_up = b->quick_tune ? 0 : 2;
  s->timed = false;
  for (unsigned i = 0; i < reps + warm_up; i++) {
    const int64_t t0 = pp_now_ns();
    int rc = cuda_enqueue_frame(b, s, s->staging_in, NULL, s->staging_out, msg);
    if (rc < 0)
      return rc;
    CUDA_CHECK(cudaEventRecord(s->ev_done, cuda_last_stream(b, s, s->staging_in)));
    cudaError_t err;
    while ((err = cudaEventQuery(s->ev_done)) == cudaErrorNotReady)
      ;
    CUDA_CHECK(err);
    if (i >= warm_up)
      samples[i - warm_up] = (pp_now_ns() - t0) / 1000.0;
  }
  *us = pp_median(samples, reps);
  return 0;
}

/* Chunks of `c` (planned, slot 0's graphs captured), or none for 1. */
static int
try_chunks(cuda_backend *b, unsigned c, char **msg)
{
  drop_chunk_graphs(&b->slots[0]);
  pp_gpu_mlp_unplan_chunks(b);
  b->chunks = 1;
  if (c == 1)
    return 0;
  set_offsets(b, c);
  int rc = pp_gpu_mlp_plan_chunks(b, b->layout.n / c, msg);
  if (rc == 0)
    rc = capture_chunk_graphs(b, &b->slots[0], msg);
  return rc;
}

/* Whether reading frames in place is worth timing at configure. */
static bool
zero_copy_worth_trying(const cuda_backend *b)
{
  const bool small = b->layout.frame_bytes <= ZERO_COPY_MAX_BYTES;
  if (!b->host_pointers)
    return false;
  if (pp_gpu_mlp_is_whole(b))
    return small || b->n_slots <= LATENCY_PLANS_MAX_SLOTS;
  return small && b->n_slots <= IN_PLACE_LAYERS_MAX_SLOTS;
}

/* PINGPONG_CUDA_ZERO_COPY=0|1. */
static int
forced_zero_copy(cuda_backend *b, const char *forced, char **msg)
{
  if (strcmp(forced, "0") != 0 && strcmp(forced, "1") != 0) {
    *msg = g_strdup_printf("PINGPONG_CUDA_ZERO_COPY=%s: give 0 or 1", forced);
    return -EINVAL;
  }
  b->zero_copy = forced[0] == '1';
  if (b->zero_copy && !b->host_pointers) {
    *msg = g_strdup("PINGPONG_CUDA_ZERO_COPY=1: this GPU cannot use host pointers to registered "
                    "memory");
    b->zero_copy = false;
    return -EINVAL;
  }
  return 0;
}

/* PINGPONG_CUDA_CHUNKS=C: that many, or an error that says which fit. */
static int
forced_chunks(const cuda_backend *b, const char *forced, unsigned *c, char **msg)
{
  char *end = NULL;
  const unsigned long want = strtoul(forced, &end, 10);
  if (*end == '\0' && (want == 1 || chunks_fit(b, want))) {
    *c = want;
    return 0;
  }
  GString *fits = g_string_new("1");
  for (size_t i = 0; i < G_N_ELEMENTS(chunk_choices); i++)
    if (chunks_fit(b, chunk_choices[i]))
      g_string_append_printf(fits, ", %u", chunk_choices[i]);
  *msg = g_strdup_printf("PINGPONG_CUDA_CHUNKS=%s does not fit these frames; give one of %s",
                         forced, fits->str);
  g_string_free(fits, TRUE);
  return -EINVAL;
}

/* How frames of the current kernels cross: in place (*zero_copy), or in
 * *chunks (1: whole), taking *us a frame; the fastest by CHUNK_GAIN over a
 * whole frame. Leaves frames whole and not in place; slot 0's graphs are
 * the current kernels'. */
static int
choose_arrangement(cuda_backend *b, bool try_zero_copy, double *us, unsigned *chunks,
                   bool *zero_copy, char **msg)
{
  *chunks = 1;
  *zero_copy = false;
  int rc = time_frames(b, &b->chunk_us_whole, msg);
  double best_us = b->chunk_us_whole;
  if (rc == 0 && try_zero_copy && zero_copy_worth_trying(b)) {
    double in_place;
    b->zero_copy = true;
    rc = time_frames(b, &in_place, msg);
    b->zero_copy = false;
    *zero_copy = rc == 0 && in_place < CHUNK_GAIN * best_us;
    if (b->trace)
      g_printerr("pingpong cuda zero-copy [%s]: %.1f µs a frame against %.1f whole; %s\n",
                 b->whole == PP_N_PATHS ? "layers" : cuda_path_name(b->whole), in_place, best_us,
                 *zero_copy ? "using it" : "not");
    if (*zero_copy) {
      *us = in_place;
      return 0;
    }
  }
  const bool chunks_pay = b->n_slots <= LATENCY_PLANS_MAX_SLOTS;
  unsigned best = 1;
  for (size_t i = 0; i < G_N_ELEMENTS(chunk_choices) && rc == 0 && chunks_pay; i++) {
    const unsigned c = chunk_choices[i];
    double chunked;
    if (!chunks_fit(b, c))
      continue;
    /* A chunk count cuBLAS cannot plan for is one fewer candidate. */
    char *why = NULL;
    if (try_chunks(b, c, &why) < 0) {
      g_free(why);
      continue;
    }
    rc = time_frames(b, &chunked, msg);
    if (rc == 0 && chunked < best_us) {
      best_us = chunked;
      best = c;
    }
  }
  if (rc == 0)
    rc = try_chunks(b, 1, msg);
  b->chunk_us_best = best_us;
  const unsigned found = best;
  if (best_us > CHUNK_GAIN * b->chunk_us_whole) {
    best = 1;
    best_us = b->chunk_us_whole;
  }
  if (b->trace)
    g_printerr("pingpong cuda chunks [%s]: a whole frame %.1f µs, best %.1f µs in %u; using %u\n",
               b->whole == PP_N_PATHS ? "layers" : cuda_path_name(b->whole), b->chunk_us_whole,
               b->chunk_us_best, found, best);
  *chunks = best;
  *us = best_us;
  return rc;
}

/* A chain of layers can beat a whole-MLP kernel on the MLP alone and lose
 * the frame: the whole kernel reads a frame in place while it computes
 * (hd: split+rowdot on BF16 pieces 70.5 µs against fused 108 alone, but
 * a paced frame 183-208 µs in chunks against 172 fused in place; H100,
 * docs/PERFORMANCE.md). So the whole kernel that lost (whole_alt) gets its
 * own arrangement timed, and the frame's time decides; slot 0's graphs
 * follow the kernels. The layers must win by CHUNK_GAIN: timed here back
 * to back they tie (hd: 162.7 µs in 3 chunks, 164.6 fused in place), but
 * a paced frame's thread pays for each of the chain's many calls, and the
 * whole kernel makes one. */
static int
choose_kernels_and_arrangement(cuda_backend *b, bool try_zero_copy, unsigned *chunks,
                               bool *zero_copy, char **msg)
{
  double us;
  int rc = choose_arrangement(b, try_zero_copy, &us, chunks, zero_copy, msg);
  if (rc < 0 || b->whole_alt == PP_N_PATHS)
    return rc;
  const pp_cuda_path chain = b->whole;
  const double chain_whole = b->chunk_us_whole, chain_best = b->chunk_us_best;
  b->whole = b->whole_alt;
  cuda_capture_slot(b, &b->slots[0]);
  double alt_us;
  unsigned alt_chunks;
  bool alt_zero_copy;
  rc = choose_arrangement(b, try_zero_copy, &alt_us, &alt_chunks, &alt_zero_copy, msg);
  const bool whole_wins = rc == 0 && CHUNK_GAIN * alt_us <= us;
  if (b->trace)
    g_printerr("pingpong cuda kernels: %s %.1f µs a frame against the layers %.1f; using %s\n",
               cuda_path_name(b->whole_alt), alt_us, us,
               whole_wins ? cuda_path_name(b->whole_alt) : "the layers");
  if (whole_wins) {
    *chunks = alt_chunks;
    *zero_copy = alt_zero_copy;
    return 0;
  }
  b->whole = chain;
  b->chunk_us_whole = chain_whole;
  b->chunk_us_best = chain_best;
  cuda_capture_slot(b, &b->slots[0]);
  return rc;
}

int
cuda_plan_frames(cuda_backend *b, char **msg)
{
  b->chunks = 1;
  b->zero_copy = false;
  b->chunk_us_whole = b->chunk_us_best = -1;
  const char *forced = g_getenv("PINGPONG_CUDA_CHUNKS");
  const char *forced_zc = g_getenv("PINGPONG_CUDA_ZERO_COPY");
  unsigned best = 1;
  bool zero_copy = false;
  int rc = 0;
  if (forced_zc && *forced_zc && (rc = forced_zero_copy(b, forced_zc, msg)) < 0)
    return rc;
  if (b->zero_copy)
    return 0;
  if (forced && *forced)
    rc = forced_chunks(b, forced, &best, msg);
  else
    rc = choose_kernels_and_arrangement(b, !(forced_zc && *forced_zc), &best, &zero_copy, msg);
  if (rc == 0 && zero_copy) {
    b->zero_copy = true;
    return 0;
  }
  if (rc == 0)
    rc = try_chunks(b, best, msg);
  for (unsigned i = 1; i < b->n_slots && rc == 0 && best > 1; i++)
    rc = capture_chunk_graphs(b, &b->slots[i], msg);
  if (rc < 0) {
    cuda_drop_chunks(b);
    return rc;
  }
  return 0;
}

void
cuda_drop_chunks(cuda_backend *b)
{
  for (unsigned i = 0; i < b->n_slots; i++)
    drop_chunk_graphs(&b->slots[i]);
  pp_gpu_mlp_unplan_chunks(b);
  b->chunks = 1;
}
