// SPDX-License-Identifier: LGPL-2.1-or-later
/* Helpers for the GPU kernel tests: every buffer on kc_stream, every CUDA
 * call checked (a failure fails the test). */
#ifndef PP_KERNEL_CHECK_H
#define PP_KERNEL_CHECK_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <cuda_runtime_api.h>
#include <glib.h>

#include "reader.h"
#include "frame.h"
#include "model.h"
#include "testutil.h"

/* The tests' stream, made by kc_main. */
extern cudaStream_t kc_stream;

/* A kernel test's main: 77 without a CUDA device; else *seed (testutil's)
 * and *quick (PP_GPU_QUICK) set, kc_stream made, the n tests run. */
int kc_main(const char *name, const struct CMUnitTest *tests, size_t n, uint64_t *seed,
            bool *quick);

#define CHECK_CUDA(call)                                                                           \
  do {                                                                                             \
    const cudaError_t err_ = (call);                                                               \
    if (err_ != cudaSuccess)                                                                       \
      fail_msg("%s: %s", #call, cudaGetErrorString(err_));                                         \
  } while (0)

/* An input X as the kernels read it, and the same X as floats for the
 * reference. */
typedef struct {
  pp_frame_layout layout;
  pp_cuda_a a;
  float *x;      /* host, n×k */
  void *d_frame; /* device */
  int32_t *h_koff, *d_koff;
} input;

/* A copy of `bytes` of host memory on the device (uninitialised when host
 * is NULL). */
void *device_copy(const void *host, size_t bytes);
/* A device buffer of n floats, all NaN (0xFF bytes). */
float *device_poisoned(size_t n);
/* n floats back from the device, the stream synchronised. */
float *host_result(const float *d, size_t n);
/* n 16-bit values of type t (bf16 or f16) back from the device as floats
 * (pp_dtype_from_bits), the stream synchronised. */
float *host_halves(const void *d, size_t n, pp_dtype t);
/* A random frame of `kind`/`format` whose X is about n×k (patch: patch
 * side), on the device and as the floats the reference reads. */
input make_input(test_rng *rng, pp_layout_kind kind, pp_pixel_format format, uint32_t n, uint32_t k,
                 uint32_t patch);
void free_input(input *in);
/* C = act(X·Wᵀ + b) in double, and the magnitude of each sum. */
void reference_linear(const float *x, uint32_t m, uint32_t k, const float *w, const float *bias,
                      uint32_t n, pp_act act, double *out, double *mag);
/* Fails unless got is within tol of ref: relative in norm, or (scaled)
 * over the magnitude of the sums, for outputs after a ReLU. */
void expect_close(const char *what, const float *got, const double *ref, const double *mag,
                  size_t n, bool scaled, double tol);
/* A model of `n_layers` layers (widths `outs`) of fresh random weights in
 * ±1.5/√in, so activations stay of order one through every layer, biases
 * in ±0.5 (none without `bias`). */
pp_model *random_layers(test_rng *rng, uint32_t k, unsigned n_layers, const uint32_t *outs,
                        const pp_act *acts, bool bias);
/* A two-layer model of fresh random weights, K → d → o. */
pp_model *random_model(test_rng *rng, uint32_t k, uint32_t d, uint32_t o, bool hidden_relu,
                       bool bias);

#endif
