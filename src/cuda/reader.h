/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The host side of the kernels' frame reader (cuda_kernels.h's pp_cuda_a):
 * how a frame layout maps onto it. */
#ifndef PP_CUDA_READER_H
#define PP_CUDA_READER_H

#include "cuda_kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The byte offsets table (K entries) for `layout`. */
void pp_cuda_k_offsets(const pp_frame_layout *layout, int32_t *table);
/* The pp_cuda_a that reads frames of `layout` at `frame` (device), given
 * that table on the host (to pick the vector path) and on the device. */
pp_cuda_a pp_cuda_a_for_layout(const pp_frame_layout *layout, const int32_t *host_table,
                               const void *frame, const int32_t *device_table);

#ifdef __cplusplus
}
#endif

#endif
