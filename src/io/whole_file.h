// SPDX-License-Identifier: LGPL-2.1-or-later
/* Reading a whole file, such as a model, with several reads in flight. */
#ifndef PP_WHOLE_FILE_H
#define PP_WHOLE_FILE_H

#include <stddef.h>
#include <stdint.h>

/* Reads all of `path` into a new buffer (g_free). A path that is not a
 * regular file (a FIFO, a directory, a device) is refused before it is
 * opened: -EISDIR for a directory, -EINVAL for the rest, with a message. */
int pp_read_whole_file(const char *path, uint8_t **bytes, size_t *len, char **msg);

#endif
