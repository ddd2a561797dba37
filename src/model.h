/* The two-layer perceptron every frame runs through:
 *
 *   H   = X · W0ᵀ (+ b0)      [N×K]·[K×D], optionally followed by ReLU
 *   Y   = H · W1ᵀ (+ b1)      [N×D]·[D×O]
 *   out = ReLU(Y)
 *
 * PyTorch: nn.Sequential(nn.Linear(K, D), [nn.ReLU(),] nn.Linear(D, O), nn.ReLU()).
 * Weights keep nn.Linear's [out, in] layout. */
#ifndef PP_MODEL_H
#define PP_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum {
  PP_HIDDEN_AUTO, /* from the file's layer indices; none for generated weights */
  PP_HIDDEN_NONE,
  PP_HIDDEN_RELU,
} pp_hidden_activation;

typedef struct {
  uint32_t k, d, o; /* inputs, hidden units, outputs */
  bool hidden_relu; /* ReLU between the two layers */
  float *w0, *b0;   /* D×K and D; b0 NULL without bias */
  float *w1, *b1;   /* O×D and O; b1 NULL without bias */
  char *source;     /* file name, or "generated", for messages */
  char *w0_name;    /* tensor names, for messages ("0.weight") */
  char *w1_name;
  uint64_t id; /* changes whenever the weights do: backends upload once per id */
} pp_model;

/* Loads a safetensors state_dict of two nn.Linear layers (names
 * "<prefix><i>.weight", "<prefix><i>.bias", biases optional; F32, F16 or BF16).
 * Layer indices one apart mean no hidden activation, further apart a ReLU
 * between them, unless `hidden` says otherwise. */
int pp_model_load(const char *path, pp_hidden_activation hidden, pp_model **out, char **msg);

/* The same from bytes already in memory; `name` is used in messages. */
int pp_model_parse(const uint8_t *bytes, size_t len, const char *name, pp_hidden_activation hidden,
                   pp_model **out, char **msg);

/* Deterministic weights from the dimensions alone, PyTorch's default range
 * (uniform in ±1/√fan_in), so a pipeline needs nothing on disk. */
int pp_model_generate(uint32_t k, uint32_t d, uint32_t o, pp_hidden_activation hidden,
                      pp_model **out);

/* Checks that frames giving K inputs per sample fit the model. */
int pp_model_check_inputs(const pp_model *model, uint32_t k, char **msg);

void pp_model_free(pp_model *model);

#endif
