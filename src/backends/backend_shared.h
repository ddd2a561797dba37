/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Streams that share one backend. Each stream (an element, an engine) gets
 * a lane: a pp_backend of its own, with its own slots, order and
 * completions, over one backend per (backend options, model, frame layout,
 * slots, forced plan) that the lanes of a process share. The shared backend
 * holds the device's context, streams, weights, plan and staging once; a
 * lane holds none of them, and no thread.
 *
 * A lane's frame takes one of the shared backend's slots for as long as the
 * device works on it; a lane whose slots are all taken waits in submit for
 * one to come free. Completions come from the shared backend's one
 * completion thread (completion=event-thread) and go to the lane whose
 * frame it was. A frame whose result the backend still holds (a staged
 * copy, sampled stage times) is finished by the next lane that needs the
 * slot, so a stream whose consumer is slow never holds the others back.
 *
 * With max-batch (and frames that stack), a slot's job holds up to a batch
 * of frames of any lanes instead: frames queue in the order submitted and
 * run as slots come free, by a lane that finds one free or by the
 * backend's one former thread (shared_batches.c). */
#ifndef PP_BACKEND_SHARED_H
#define PP_BACKEND_SHARED_H

#include "backend.h"

/* A lane for a stream with these options. The backend behind it is opened
 * (or joined) here, unconfigured; configure joins the one already
 * configured for the same model, layout, slots and forced plan, or
 * configures one. `opts->completion` is not used. *note as pp_backend_open
 * (AUTO on a machine without CUDA), for every lane of such a backend. */
int pp_backend_open_shared(const pp_backend_options *opts, pp_backend **out, char **note,
                           char **msg);

/* Backends the process's lanes share now, and lanes over them. */
void pp_backend_shared_census(unsigned *backends, unsigned *lanes);

#endif
