// SPDX-License-Identifier: LGPL-2.1-or-later
/* Runs the fuzz target once per corpus file, as a regular test on every
 * build (gcc, ASan in CI): each input the fuzzer kept, and each regression
 * it found, stays checked. Arguments: files or directories of them. */
#include <glib.h>
#include <stdint.h>
#include <stdio.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int
replay_file(const char *path)
{
  gchar *bytes = NULL;
  gsize len = 0;
  GError *err = NULL;
  if (!g_file_get_contents(path, &bytes, &len, &err)) {
    fprintf(stderr, "%s\n", err->message);
    g_error_free(err);
    return 1;
  }
  /* An exact-size copy: g_file_get_contents adds a NUL past the end. */
  uint8_t *exact = g_memdup2(bytes, len);
  LLVMFuzzerTestOneInput(exact, len);
  g_free(exact);
  g_free(bytes);
  return 0;
}

int
main(int argc, char **argv)
{
  int failures = 0, inputs = 0;
  for (int i = 1; i < argc; i++) {
    if (!g_file_test(argv[i], G_FILE_TEST_IS_DIR)) {
      failures += replay_file(argv[i]);
      inputs++;
      continue;
    }
    GDir *dir = g_dir_open(argv[i], 0, NULL);
    const char *name;
    while (dir && (name = g_dir_read_name(dir))) {
      gchar *path = g_build_filename(argv[i], name, NULL);
      failures += replay_file(path);
      inputs++;
      g_free(path);
    }
    if (dir)
      g_dir_close(dir);
  }
  printf("%d inputs replayed\n", inputs);
  return failures || inputs == 0 ? 1 : 0;
}
