/* depay-copy-cost: what gdpdepay's two copies of one frame's payload cost
 * this CPU after its last byte has arrived (docs/PERFORMANCE.md, "Across
 * hosts"): GStreamer 1.22's gdpdepay maps the whole payload from its
 * adapter to validate it (a copy, as the payload spans fdsrc's reads), then
 * copies it from the adapter into the buffer it pushes. Times both copies
 * from fresh blocks of BLOCK bytes (fdsrc's reads) into one payload-sized
 * buffer reused (the adapter's) and into one of four (the pushed frames'),
 * p50 and p90 over 200 frames, µs.
 *
 *   depay-copy-cost [PAYLOAD [BLOCK]]     # 2073600 (1080p GRAY8), 262144 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { FRAMES = 200, FRAMES_KEPT = 4 };

static long long
now_ns(void)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1000000000LL + t.tv_nsec;
}

static int
by_value(const void *a, const void *b)
{
  const double x = *(const double *) a, y = *(const double *) b;
  return (x > y) - (x < y);
}

/* Copies the payload out of its blocks into dst. */
static void
gather(char *dst, char *const *blocks, size_t payload, size_t block)
{
  for (size_t at = 0, i = 0; at < payload; at += block, i++)
    memcpy(dst + at, blocks[i], payload - at < block ? payload - at : block);
}

int
main(int argc, char **argv)
{
  const size_t payload = argc > 1 ? strtoul(argv[1], NULL, 10) : 2073600;
  const size_t block = argc > 2 ? strtoul(argv[2], NULL, 10) : 262144;
  if (payload == 0 || block == 0) {
    fprintf(stderr, "usage: depay-copy-cost [PAYLOAD [BLOCK]]\n");
    return 2;
  }
  const size_t n_blocks = (payload + block - 1) / block;
  char *assembled = malloc(payload), *pushed[FRAMES_KEPT];
  char **blocks = calloc(n_blocks, sizeof *blocks);
  double us[FRAMES];
  if (!assembled || !blocks)
    return 1;
  memset(assembled, 0, payload);
  for (int i = 0; i < FRAMES_KEPT; i++) {
    if (!(pushed[i] = malloc(payload)))
      return 1;
    memset(pushed[i], 0, payload);
  }
  for (int f = 0; f < FRAMES; f++) {
    for (size_t i = 0; i < n_blocks; i++) {
      if (!(blocks[i] = malloc(block)))
        return 1;
      memset(blocks[i], f + (int) i, block); /* as the socket's reads fill them */
    }
    const long long t0 = now_ns();
    gather(assembled, blocks, payload, block);
    gather(pushed[f % FRAMES_KEPT], blocks, payload, block);
    us[f] = (now_ns() - t0) / 1000.0;
    for (size_t i = 0; i < n_blocks; i++)
      free(blocks[i]);
  }
  qsort(us, FRAMES, sizeof us[0], by_value);
  printf("two copies of a %zu-byte payload from %zu-byte blocks: p50 %.0f µs, p90 %.0f µs\n",
         payload, block, us[FRAMES / 2], us[FRAMES * 9 / 10]);
  for (int i = 0; i < FRAMES_KEPT; i++)
    free(pushed[i]);
  free(assembled);
  free(blocks);
  return 0;
}
