// SPDX-License-Identifier: LGPL-2.1-or-later
/* The perceptron every frame runs through: 1 to PP_MAX_LAYERS Linear
 * layers, each followed by an element-wise activation (identity for none):
 *
 *   h₀ = X;   hᵢ = actᵢ(hᵢ₋₁ · Wᵢᵀ + bᵢ);   out = h_L
 *
 * PyTorch: any nn.Sequential of nn.Linear and the activations of
 * activation.h. Weights keep nn.Linear's [out, in] layout. Where a file
 * gets its activations from: model_desc.h, and the README's "Models". */
#ifndef PP_MODEL_H
#define PP_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "activation.h"
#include "dtype.h"
#include "model_desc.h"

/* For files with no description (and the generated weights): whether a
 * ReLU sits between the two layers. */
typedef enum {
  PP_HIDDEN_AUTO, /* from the file's layer indices; none for generated weights */
  PP_HIDDEN_NONE,
  PP_HIDDEN_RELU,
} pp_hidden_activation;

typedef struct {
  uint32_t in, out;
  float *w;   /* out × in */
  float *b;   /* out, or NULL without bias */
  pp_act act; /* after the layer */
  char *name; /* its weight tensor's name, for messages ("0.weight") */
} pp_layer;

typedef struct {
  uint32_t k, o; /* inputs of the first layer, outputs of the last */
  unsigned n_layers;
  pp_layer layers[PP_MAX_LAYERS];
  char *source; /* file name, or "generated", for messages */
  /* Set when the loader had to assume the activations (a file with no
   * description): what it assumed, for the element to say once. */
  char *assumed;
  /* Set when a tensor holds NaN or Inf: which, for the element to say
   * once before every score comes out NaN. */
  char *nonfinite;
  uint64_t id; /* changes whenever the weights do: backends upload once per id */
  /* The type the file keeps every weight and bias in: bfloat16 or float16
   * where all are, float32 otherwise (and for generated weights). The
   * values above are those, widened exactly. */
  pp_dtype stored;
} pp_model;

/* Loads a safetensors state_dict of nn.Linear layers (names
 * "<prefix><i>.weight", "<prefix><i>.bias", biases optional; F32, F16 or
 * BF16), in index order. Activations from `layers` (the element's
 * property) if not NULL or empty, else from the file's metadata
 * (PP_MODEL_DESC_KEY), else the two-layer convention: ReLU between the
 * layers when their indices are further apart than one (or as `hidden`
 * says), ReLU at the end, and model->assumed says so. */
int pp_model_load(const char *path, const char *layers, pp_hidden_activation hidden, pp_model **out,
                  char **msg);

/* The same from bytes already in memory; `name` is used in messages. */
int pp_model_parse(const uint8_t *bytes, size_t len, const char *name, const char *layers,
                   pp_hidden_activation hidden, pp_model **out, char **msg);

/* Deterministic weights from the shapes alone, PyTorch's default range
 * (uniform in ±1/√fan_in), so a pipeline needs nothing on disk:
 * n_layers Linear layers, layer i with outs[i] outputs and acts[i] after
 * it. */
int pp_model_generate_layers(uint32_t k, unsigned n_layers, const uint32_t *outs,
                             const pp_act *acts, pp_model **out);

/* Generated weights for a description whose every Linear has its widths,
 * the first taking K inputs; -EINVAL with a message otherwise. */
int pp_model_generate_desc(uint32_t k, const pp_model_desc *desc, pp_model **out, char **msg);

/* The seed's network: Linear(K, D), [ReLU], Linear(D, O), ReLU. */
int pp_model_generate(uint32_t k, uint32_t d, uint32_t o, pp_hidden_activation hidden,
                      pp_model **out);

/* Checks that frames giving K inputs per sample fit the model. */
int pp_model_check_inputs(const pp_model *model, uint32_t k, char **msg);

/* The widest layer output but the last: what intermediate buffers hold per
 * sample (0 for one layer). */
uint32_t pp_model_max_hidden(const pp_model *model);

/* "linear(192,512), gelu, linear(512,1)": the model in model_desc.h's
 * grammar; caller frees. */
char *pp_model_describe(const pp_model *model);

/* A digest of everything the model computes with (layers, activations,
 * weights, biases): equal for two loads of the same file, different for
 * any other weights. Caller frees. */
char *pp_model_fingerprint(const pp_model *model);

void pp_model_free(pp_model *model);

#endif
