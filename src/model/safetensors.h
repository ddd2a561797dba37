// SPDX-License-Identifier: LGPL-2.1-or-later
/* Reader for the safetensors format (what safetensors.torch.save_file and
 * safetensors.numpy.save_file write): an 8-byte little-endian header length,
 * a JSON header naming each tensor's dtype, shape and byte range, then the
 * data. Everything is validated before a byte of data is used. */
#ifndef PP_SAFETENSORS_H
#define PP_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "dtype.h"

#define PP_ST_MAX_RANK 8

/* A tensor's dtype beyond pp_dtype's: a valid safetensors dtype this
 * project does not read (F64, integers, F8, …). */
#define PP_DTYPE_OTHER ((pp_dtype) PP_N_DTYPES)

typedef struct {
  char *name;
  char *dtype_name; /* as written in the header, for messages */
  pp_dtype dtype;
  uint32_t rank;
  uint64_t shape[PP_ST_MAX_RANK];
  uint64_t elements;
  uint64_t offset;     /* of the first byte inside the data section */
  const uint8_t *data; /* inside the file's bytes; not owned */
  uint64_t bytes;
} pp_st_tensor;

typedef struct {
  pp_st_tensor *tensors; /* in header order */
  size_t n_tensors;
  char **meta_keys, **meta_values; /* the "__metadata__" map, string to string */
  size_t n_meta;
} pp_safetensors;

/* Parses and validates file[0..len); tensors point into `file`, which must
 * outlive the result. -EINVAL with a message that names the problem. */
int pp_safetensors_parse(const uint8_t *file, size_t len, pp_safetensors **out, char **msg);
void pp_safetensors_free(pp_safetensors *st);

/* A "__metadata__" value by key, or NULL. */
const char *pp_safetensors_metadata(const pp_safetensors *st, const char *key);

/* Converts a F32/F16/BF16 tensor to float32 (little-endian data). */
void pp_st_tensor_to_f32(const pp_st_tensor *t, float *dst);

/* "64×300", for messages; caller frees. */
char *pp_st_shape_string(const pp_st_tensor *t);

#endif
