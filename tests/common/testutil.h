// SPDX-License-Identifier: LGPL-2.1-or-later
/* Helpers shared by the tests: a seeded random source, an independent
 * double-precision reference of the MLP, and error measures. */
#ifndef PP_TESTUTIL_H
#define PP_TESTUTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend.h"
#include "frame_layout.h"
#include "model.h"

/* Error bound for float32 results against a float64 reference, for
 * test_relative_error (single GEMMs) and test_scaled_error (whole MLPs):
 * float32 rounding over K ≤ a few thousand terms lands near 1e-6. */
#define PP_FP32_REL_TOL 1e-5

typedef struct {
  uint64_t state;
} test_rng;

void test_rng_seed(test_rng *r, uint64_t seed);
uint64_t test_rng_next(test_rng *r);
/* Uniform in [lo, hi). */
double test_rng_uniform(test_rng *r, double lo, double hi);
void test_rng_fill_bytes(test_rng *r, uint8_t *dst, size_t n);
void test_rng_fill_floats(test_rng *r, float *dst, size_t n, float lo, float hi);

/* PyTorch's activations in double precision. */
double test_activation(pp_act act, double x);

/* out[n×o] = the model applied to x[n×k] in double precision, triple loops straight
 * from the definition: no code shared with kernels/. With `magnitude`, also
 * the same sums over absolute values (Σ|w|·|h| + |b|, through both layers):
 * what float32's forward error is proportional to. */
void test_reference_mlp(const pp_model *m, const float *x, uint32_t n, double *out,
                        double *magnitude);

/* ‖a − ref‖₂ / ‖ref‖₂; 0 when both are zero, +inf on NaN. */
double test_relative_error(const float *a, const double *ref, size_t n);

/* ‖a − ref‖₂ / ‖magnitude + |ref|‖₂: the relative error of a whole MLP,
 * which stays meaningful when the final ReLU leaves only a few small outputs
 * after cancellation (where ‖ref‖ alone would measure the cancellation), and
 * when an activation such as sigmoid gives outputs far larger than its sums. */
double test_scaled_error(const float *a, const double *ref, const double *magnitude, size_t n);

/* Seed from PP_TEST_SEED if set, else from the clock; printed so a failure
 * can be replayed. */
uint64_t test_seed(void);

/* True when the CUDA backend can run here; otherwise says why on stderr
 * (GPU tests then exit 77: skipped). Exits the test program with 1 when the
 * build has CUDA and its module does not load (or loads although
 * PP_TEST_CUDA_LIBS_HIDDEN says its libraries are hidden). */
bool test_cuda_usable(void);

/* Error bounds of the 16-bit precisions against the float64 reference.
 * Relative to the results (test_relative_error), for models whose
 * results do not cancel: X, the weights and each layer's activations
 * rounded to 2⁻⁹ (bf16) or 2⁻¹² (fp16) relative; four layers measure
 * ~3e-3 and ~5e-4. */
#define PP_BF16_REL_TOL 1e-2
#define PP_FP16_REL_TOL 2e-3
/* Scaled (test_scaled_error), for any model: a product of two rounded
 * values is off by at most 2u of its size, u = 2⁻⁹ or 2⁻¹². */
#define PP_BF16_SCALED_TOL 4e-3
#define PP_FP16_SCALED_TOL 5e-4
/* Between the GPU and the CPU backend at one precision only the order of
 * the sums differs, which moves a rounded activation by one step now and
 * then: the two stay within this fraction of the CPU's own error against
 * float64 (measured up to 0.21), where results that skip a rounding, or
 * round twice, differ by about the whole of it. */
#define PP_SAME_PRECISION_RATIO 0.4

/* The scaled bound for `precision`: fp32's, TF32's 1e-3, or the two
 * above. */
double test_precision_tol(pp_precision precision);

/* `count` frames of `layout` through a backend opened with `opts` (one
 * slot), in order, each result into outputs[i]. */
void test_run_frames(const pp_backend_options *opts, const pp_model *model,
                     const pp_frame_layout *layout, void *const *frames, float *const *outputs,
                     int count);

/* A safetensors file's bytes: the 8-byte header length, `json`, then
 * `data_len` bytes of `data` (NULL: zeros); *len their count. g_free it. */
uint8_t *test_safetensors_bytes(const char *json, const void *data, size_t data_len, size_t *len);
/* The same written to a temporary file, less its last `cut` bytes; the
 * path, for the caller to unlink and g_free. */
char *test_write_safetensors(const char *json, const void *data, size_t data_len, size_t cut);

/* Fills every float with NaN, so an element a kernel fails to write shows. */
void test_poison(float *dst, size_t n);

#endif
