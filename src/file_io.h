/* Whole-file reads for small inputs such as model files. */
#ifndef PP_FILE_IO_H
#define PP_FILE_IO_H

#include <stddef.h>
#include <stdint.h>

/* Reads all of `path` into a new buffer (g_free it). Negative errno and a
 * message on failure. */
int pp_read_whole_file(const char *path, uint8_t **bytes, size_t *len, char **msg);

#endif
