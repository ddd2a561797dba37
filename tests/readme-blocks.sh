#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Runs the README's commands as a reader would, so the README cannot drift
# from the code: every ```sh block, in order, as one shell script (so what
# one block exports or writes, the next one has), and every ```python
# block, in a scratch folder that sees the checkout's tools/, pipelines/,
# examples/ and build/. A command stops the run when it fails. Commands
# that need what this machine may not have are left out, each with the
# reason printed: the set-up and test commands (CI runs them itself), the
# real install (tests/install-check.sh --system), a camera, a display, a
# GPU, a second host.
#
#   tests/readme-blocks.sh [BUILD_DIR]   (from anywhere; README.md of this checkout)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=$(realpath "${1:-$repo/build}")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for dir in tools pipelines examples bench; do ln -s "$repo/$dir" "$work/$dir"; done
ln -s "$build" "$work/build"
have_gpu=0
command -v nvidia-smi > /dev/null && nvidia-smi -L > /dev/null 2>&1 && have_gpu=1

# Why a command cannot run here, or nothing.
skip_reason() {
  case "$1" in
    *tools/setup-debian.sh* | *"meson test -C build --print-errorlogs"*) echo "CI runs it itself" ;;
    *"ninja -C build install"* | *"ninja -C build uninstall"*) echo "tests/install-check.sh --system runs it" ;;
    "gst-inspect-1.0 cudamlp" | "pingpong-export --help") echo "needs the install above" ;;
    *v4l2src*) [ -e /dev/video0 ] || echo "no camera here" ;;
    pipelines/cameras.sh*) echo "needs cameras on the network (tests/pipelines/cameras_test.sh runs it)" ;;
    *autovideosink*) echo "needs a display" ;;
    *nvh264dec* | *device-id=0,1* | *"--suite gpu"* | *tools/gpu-check.sh*)
      [ "$have_gpu" = 1 ] || echo "needs a GPU" ;;
  esac
}

# The sh and python blocks in order: a line "\x1dLANG" opens each, "\x1e" ends it.
extract() {
  awk '
    /^```/ { if (inside) { inside = 0; print "\x1e"; next }
             if ($0 == "```sh" || $0 == "```python") { inside = 1; print "\x1d" substr($0, 4); next } }
    inside { print }' "$repo/README.md"
}

script=$work/readme.sh
{
  echo "set -euo pipefail"
  echo "cd '$work'"
  # The python blocks are a reader's own code: the python3 that has the
  # set-up's packages (Debian's, where another comes first on PATH).
  echo 'py=python3'
  echo '"$py" -c "import gi, numpy, torch" 2> /dev/null || py=/usr/bin/python3'
  lang="" pending="" python="" n=0
  while IFS= read -r line; do
    case "$line" in
      $'\x1d'*) lang=${line#?}; continue ;;
      $'\x1e')
        if [ "$lang" = python ]; then
          n=$((n + 1))
          printf 'echo %q\n' "\$ python3 (the README's python block $n)"
          printf "\"\$py\" - <<'PYTHON_BLOCK'\n%sPYTHON_BLOCK\n" "$python"
          python=""
        fi
        continue ;;
    esac
    if [ "$lang" = python ]; then
      python+="$line"$'\n'
      continue
    fi
    if [[ $line == *\\ ]]; then
      pending+="${line%\\} "
      continue
    fi
    command="$pending$line"
    pending=""
    [[ -z ${command// /} || $command == \#* ]] && continue
    reason=$(skip_reason "$command")
    if [ -n "$reason" ]; then
      printf 'echo %q\n' "skipped ($reason): $command"
    else
      printf 'echo %q\n' "\$ $command"
      printf '%s\n' "$command"
    fi
  done < <(extract)
} > "$script"
bash "$script"
echo "README: every command ran"
