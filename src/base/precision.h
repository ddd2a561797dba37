/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A backend's precision, its names and the element type it stores
 * weights and activations in: what the backends, the element and the
 * benchmark share. */
#ifndef PP_PRECISION_H
#define PP_PRECISION_H

#include "dtype.h"

/* The arithmetic of a backend's layers. fp32 and tf32 keep every tensor in
 * float32 (tf32: cuBLAS's GEMMs on TF32 tensor cores); bf16 and fp16 round
 * the weights once at configure and each layer's activations as they are
 * stored, adding in float32; results are float32 at every precision. */
typedef enum {
  PP_PRECISION_FP32,
  PP_PRECISION_TF32,
  PP_PRECISION_BF16,
  PP_PRECISION_FP16,
  PP_N_PRECISIONS,
} pp_precision;

/* "fp32", "tf32", "bf16", "fp16": the element's and the benchmark's names. */
const char *pp_precision_name(pp_precision precision);
/* The name back; -EINVAL for anything else. */
int pp_precision_parse(const char *name, pp_precision *out);
/* The type weights and activations are stored in. */
pp_dtype pp_precision_dtype(pp_precision precision);
/* The precision that keeps weights stored as `stored` as they are: bf16,
 * fp16, or fp32 (what the element's precision=auto runs a model file in). */
pp_precision pp_precision_for_stored(pp_dtype stored);

#endif
