// SPDX-License-Identifier: LGPL-2.1-or-later
/* The MLP's math on the CPU: the reference the CUDA kernels are checked
 * against, and what the CPU backend runs. Plain C; weights are packed once
 * into column panels so the inner loop streams contiguous memory. */
#ifndef PP_CPU_MLP_H
#define PP_CPU_MLP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "activation.h"
#include "frame_layout.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Output columns per packed panel. */
#define PP_CPU_PANEL 16

/* X (layout->n × layout->k floats) from one frame: bytes become
 * x·scale + bias (x/255), YUV pixels R,G,B, tensors are copied as they are. */
void pp_cpu_gather(const pp_frame_layout *layout, const void *frame, float *x);

/* Floats needed to pack a [out × in] weight (nn.Linear's layout). */
size_t pp_cpu_packed_floats(uint32_t out, uint32_t in);

/* Packs w [out × in] into panels of PP_CPU_PANEL outputs, k-major inside a
 * panel, zero-padded past `out`. */
void pp_cpu_pack_weights(const float *w, uint32_t out, uint32_t in, float *packed);

/* y[n × out] = act(x[n × in] · wᵀ + bias), w given packed; bias may be NULL. */
void pp_cpu_linear(const float *x, uint32_t n, uint32_t in, const float *packed, const float *bias,
                   uint32_t out, pp_act act, float *y);

/* y[i] = act(dot(h[i × d], w) + bias) for i < n: a last layer with one output. */
void pp_cpu_matvec(const float *h, uint32_t n, uint32_t d, const float *w, float bias, pp_act act,
                   float *y);

#ifdef __cplusplus
}
#endif

#endif
