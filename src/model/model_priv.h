// SPDX-License-Identifier: LGPL-2.1-or-later
/* What the model's files share and the rest of the core does not see. */
#ifndef PP_MODEL_PRIV_H
#define PP_MODEL_PRIV_H

#include <stdint.h>

/* Large enough for any frame this project maps, small enough that sizes in
 * bytes never overflow. */
#define PP_MODEL_MAX_DIM (1u << 24)

/* A new model's identity: never the same twice in a process. */
uint64_t pp_model_new_id(void);

#endif
