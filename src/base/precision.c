/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Precisions by name and by element type (precision.h). */
#include "precision.h"

#include <errno.h>
#include <string.h>

static const char *const precision_names[PP_N_PRECISIONS] = { "fp32", "tf32", "bf16", "fp16" };

const char *
pp_precision_name(pp_precision precision)
{
  return precision < PP_N_PRECISIONS ? precision_names[precision] : "?";
}

int
pp_precision_parse(const char *name, pp_precision *out)
{
  for (int i = 0; i < PP_N_PRECISIONS; i++)
    if (name && strcmp(name, precision_names[i]) == 0) {
      *out = (pp_precision) i;
      return 0;
    }
  return -EINVAL;
}

pp_dtype
pp_precision_dtype(pp_precision precision)
{
  return precision == PP_PRECISION_BF16   ? PP_DTYPE_BF16
         : precision == PP_PRECISION_FP16 ? PP_DTYPE_F16
                                          : PP_DTYPE_F32;
}

pp_precision
pp_precision_for_stored(pp_dtype stored)
{
  return stored == PP_DTYPE_BF16  ? PP_PRECISION_BF16
         : stored == PP_DTYPE_F16 ? PP_PRECISION_FP16
                                  : PP_PRECISION_FP32;
}
