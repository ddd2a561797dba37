// SPDX-License-Identifier: LGPL-2.1-or-later
/* Registered (fixed) buffers of a pp_io: memory registered once, so
 * transfers inside it skip the kernel's per-request page pinning. Any
 * thread may register and forget; the submitting thread looks up. */
#include <string.h>
#include <sys/uio.h>

#include "uring_io_priv.h"

void
pp_io_fixed_start(pp_io *io)
{
#ifdef PP_HAVE_URING
  /* A sparse table that pp_io_register_buffer fills slot by slot. */
  io->fixed_ready = io_uring_register_buffers_sparse(&io->ring, FIXED_SLOTS) == 0;
#else
  (void) io;
#endif
}

int
pp_io_fixed_index(pp_io *io, const uint8_t *buf, size_t len)
{
  int index = -1;
  g_mutex_lock(&io->fixed_lock);
  for (int i = 0; i < FIXED_SLOTS && index < 0; i++)
    if (io->fixed[i].base && buf >= io->fixed[i].base &&
        buf + len <= io->fixed[i].base + io->fixed[i].len)
      index = i;
  g_mutex_unlock(&io->fixed_lock);
  return index;
}

uint64_t
pp_io_fixed_transfers(const pp_io *io)
{
  return io->fixed_transfers;
}

bool
pp_io_register_buffer(pp_io *io, void *base, size_t len)
{
#ifdef PP_HAVE_URING
  if (!io->ring_ready || !io->fixed_ready)
    return false;
  bool ok = false;
  g_mutex_lock(&io->fixed_lock);
  int slot = -1;
  for (int i = 0; i < FIXED_SLOTS && !ok; i++) {
    if (io->fixed[i].base == base && io->fixed[i].len == len)
      ok = true;
    else if (!io->fixed[i].base && slot < 0)
      slot = i;
  }
  if (!ok && slot >= 0) {
    struct iovec iov = { .iov_base = base, .iov_len = len };
    __u64 tag = 0;
    if (io_uring_register_buffers_update_tag(&io->ring, slot, &iov, &tag, 1) == 1) {
      io->fixed[slot] = (fixed_range){ base, len };
      ok = true;
    }
  }
  g_mutex_unlock(&io->fixed_lock);
  return ok;
#else
  (void) io, (void) base, (void) len;
  return false;
#endif
}

void
pp_io_forget_buffer(pp_io *io, void *base)
{
#ifdef PP_HAVE_URING
  g_mutex_lock(&io->fixed_lock);
  for (int i = 0; i < FIXED_SLOTS; i++) {
    if (io->fixed[i].base == base) {
      /* An empty entry clears the slot; requests already using it keep the
       * old registration until they complete. */
      struct iovec iov = { 0 };
      __u64 tag = 0;
      io_uring_register_buffers_update_tag(&io->ring, i, &iov, &tag, 1);
      io->fixed[i] = (fixed_range){ 0 };
    }
  }
  g_mutex_unlock(&io->fixed_lock);
#else
  (void) io, (void) base;
#endif
}
