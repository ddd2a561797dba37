// SPDX-License-Identifier: LGPL-2.1-or-later
/* The text that says what a model is, where a state_dict cannot: its
 * Linear layers in order and the activation after each. The grammar, also
 * in the README ("Models"):
 *
 *   layers  := module ("," module)*            spaces anywhere between tokens
 *   module  := "linear" ["(" IN "," OUT ")"]
 *            | "relu" | "leaky_relu" ["(" SLOPE ")"] | "gelu" ["(" "tanh" ")"]
 *            | "gelu_tanh" | "silu" | "sigmoid" | "tanh" | "identity"
 *
 * e.g. "linear(192,512), gelu, linear(512,1)". Names are case-insensitive
 * and may be PyTorch's class names (LeakyReLU, SiLU). It starts with a
 * Linear; each Linear is followed by at most one activation other than
 * identity (none means identity); 1 to PP_MAX_LAYERS Linear layers. The
 * widths are optional; when given they are checked against the tensors.
 * tools/pingpong-export writes this text into the safetensors header's
 * "__metadata__" under PP_MODEL_DESC_KEY. */
#ifndef PP_MODEL_DESC_H
#define PP_MODEL_DESC_H

#include <stdbool.h>
#include <stdint.h>

#include "activation.h"

#define PP_MAX_LAYERS 8
#define PP_MODEL_DESC_KEY "pingpong.layers"

typedef struct {
  bool has_dims;
  uint32_t in, out;
  pp_act act; /* after this Linear */
} pp_desc_linear;

typedef struct {
  unsigned n_linear;
  pp_desc_linear linear[PP_MAX_LAYERS];
} pp_model_desc;

/* -EINVAL with a message naming the module (1-based position) at fault. */
int pp_model_desc_parse(const char *text, pp_model_desc *out, char **msg);

/* "gelu", "leaky_relu(0.2)": the grammar's spelling; caller frees. */
char *pp_act_to_string(pp_act act);

#endif
