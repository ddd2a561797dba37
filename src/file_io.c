#include "file_io.h"

#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int
pp_read_whole_file(const char *path, uint8_t **bytes, size_t *len, char **msg)
{
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    *msg = g_strdup(g_strerror(err));
    return -err;
  }
  struct stat st;
  int rc = 0;
  if (fstat(fd, &st) < 0) {
    rc = -errno;
  } else if (S_ISDIR(st.st_mode)) {
    rc = -EISDIR;
  } else {
    uint8_t *buf = g_malloc(st.st_size ? st.st_size : 1);
    size_t done = 0;
    while (done < (size_t) st.st_size) {
      const ssize_t n = pread(fd, buf + done, st.st_size - done, done);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0) {
        rc = n < 0 ? -errno : -EIO;
        break;
      }
      done += n;
    }
    if (rc == 0) {
      *bytes = buf;
      *len = done;
    } else {
      g_free(buf);
    }
  }
  close(fd);
  if (rc < 0)
    *msg = g_strdup(g_strerror(-rc));
  return rc;
}
