/* What the CUDA backend offers beyond pp_backend_ops: stage timings for the
 * benchmark, and the names of its MLP paths. */
#ifndef PP_BACKEND_CUDA_H
#define PP_BACKEND_CUDA_H

#include <stddef.h>

#include "backend.h"

/* How a layer runs on the GPU; picked per layer at configure by timing
 * each candidate on the real shapes, unless PINGPONG_CUDA_PATH names them
 * (one for all, or one per layer joined by '+'). A last layer with at most
 * PP_ROWDOT_MAX_O outputs (and a layer before it) runs in the row-dot
 * kernel. */
typedef enum {
  PP_PATH_FUSED, /* one kernel for a whole two-layer MLP (O = 1, D ≤ 256) */
  PP_PATH_SMALL, /* one kernel for a whole two-layer MLP (O ≤ 32, D ≤ 256), a few rows a block */
  PP_PATH_OWN,   /* our GEMM, 128×128 tiles, bias and activation in its epilogue */
  PP_PATH_OWN_64, /* the same with 64×64 tiles */
  PP_PATH_CUBLAS, /* cuBLASLt with its bias/ReLU epilogue (a conversion kernel before a
                     first layer of bytes, an activation kernel after for the rest) */
  PP_PATH_SPLIT,  /* a first layer of bytes on cuBLASLt's TF32 tensor cores, exact products
                     of W split in two (one for TF32); later layers on cublas */
  PP_N_PATHS,
} pp_cuda_path;

const char *pp_cuda_path_name(pp_cuda_path path);

/* Median time, in microseconds, of each stage alone on a configured CUDA
 * backend, on its first slot's stream with CUDA events: uploading `input`
 * (host memory, as a frame would come), the MLP, downloading the result to
 * `output`. `reps` repetitions after a warm-up. */
typedef struct {
  double h2d_us, mlp_us, d2h_us;
} pp_cuda_stage_times;

int pp_cuda_time_stages(pp_backend *b, const void *input, float *output, unsigned reps,
                        pp_cuda_stage_times *out, char **msg);

/* Median time of the MLP alone on each path that suits the configured
 * shapes (negative for the others), as the autotuner measures them. */
int pp_cuda_time_paths(pp_backend *b, unsigned reps, double us[PP_N_PATHS], char **msg);

#endif
