// SPDX-License-Identifier: LGPL-2.1-or-later
/* Helpers shared by the tests: a seeded random source, an independent
 * double-precision reference of the MLP, and error measures. */
#ifndef PP_TESTUTIL_H
#define PP_TESTUTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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

/* Fills every float with NaN, so an element a kernel fails to write shows. */
void test_poison(float *dst, size_t n);

#endif
