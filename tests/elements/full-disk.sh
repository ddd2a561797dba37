#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The full-disk case of test_uring_readers on a filesystem of its own: a
# 1 MiB tmpfs mounted in a private mount namespace (needs root, or
# permission to make one; skipped otherwise).
#   tests/elements/full-disk.sh TEST_PROGRAM
set -euo pipefail
program=$1
if ! unshare --mount true 2> /dev/null; then
  echo "no mount namespace can be made here: skipped"
  exit 77
fi
mnt=$(mktemp -d)
trap 'rmdir "$mnt"' EXIT
# shellcheck disable=SC2016
unshare --mount --propagation private sh -c '
  mount -t tmpfs -o size=1m pp-full "$1" || { echo "tmpfs cannot be mounted: skipped"; exit 77; }
  PP_TEST_FULL_DIR=$1 PP_TEST_FILTER=test_full_disk_one_error exec "$2"' sh "$mnt" "$program"
