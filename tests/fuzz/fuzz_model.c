// SPDX-License-Identifier: LGPL-2.1-or-later
/* The model loader under fuzzing: whatever bytes a user's file holds, and
 * whatever text the layers property gets, loading ends in a model whose
 * layers chain or in an error with a message, and frees everything.
 *
 * Input: byte 0 is the length L of a layers text (0: none), bytes 1..L the
 * text, the rest the safetensors file. Built with libFuzzer (meson option
 * fuzz, clang) or, for the regular test, with replay.c over the corpus. */
#include <glib.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "model.h"
#include "model_desc.h"

/* An invariant broken: a crash the fuzzer reports with its input. */
#define REQUIRE(cond)                                                                              \
  do {                                                                                             \
    if (!(cond))                                                                                   \
      abort();                                                                                     \
  } while (0)

static void
check_model(const pp_model *m)
{
  REQUIRE(m->n_layers >= 1 && m->n_layers <= PP_MAX_LAYERS);
  REQUIRE(m->k == m->layers[0].in && m->o == m->layers[m->n_layers - 1].out);
  for (unsigned l = 1; l < m->n_layers; l++)
    REQUIRE(m->layers[l].in == m->layers[l - 1].out);
  for (unsigned l = 0; l < m->n_layers; l++)
    REQUIRE(m->layers[l].w && m->layers[l].act.kind < PP_N_ACTS);
  char *msg = NULL;
  REQUIRE(pp_model_check_inputs(m, m->k, &msg) == 0);
  /* What describe writes, the grammar reads back to the same layers. */
  char *text = pp_model_describe(m);
  pp_model_desc d;
  REQUIRE(pp_model_desc_parse(text, &d, &msg) == 0);
  REQUIRE(d.n_linear == m->n_layers);
  for (unsigned l = 0; l < d.n_linear; l++)
    REQUIRE(d.linear[l].in == m->layers[l].in && d.linear[l].out == m->layers[l].out &&
            d.linear[l].act.kind == m->layers[l].act.kind);
  g_free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  if (size < 1 || size < 1u + data[0])
    return 0;
  char *layers = data[0] ? g_strndup((const char *) data + 1, data[0]) : NULL;
  const size_t skip = 1u + data[0];
  /* An exact-size copy, so a read past the end is caught. */
  uint8_t *file = g_memdup2(data + skip, size - skip);

  char *msg = NULL;
  pp_model_desc d;
  if (layers && pp_model_desc_parse(layers, &d, &msg) < 0) {
    REQUIRE(msg != NULL);
    g_clear_pointer(&msg, g_free);
  }
  pp_model *m = NULL;
  const int rc = pp_model_parse(file, size - skip, "fuzz", layers, PP_HIDDEN_AUTO, &m, &msg);
  if (rc == 0) {
    check_model(m);
    pp_model_free(m);
  } else {
    REQUIRE(rc < 0 && m == NULL && msg != NULL);
    g_clear_pointer(&msg, g_free);
  }
  g_free(file);
  g_free(layers);
  return 0;
}
