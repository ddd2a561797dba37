#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Pack what the project needs at run time on an offline GPU host that has CUDA
# but no GStreamer (Ubuntu 24.04 with CUDA 13 was tried): the Debian runtime
# packages of GStreamer (its CUDA library included), GLib, liburing, cmocka
# and meson, plus env.sh, which unpacks them there and sets the environment.
#
#   usage: bundle.sh DIR [EXTRA_DEBIAN_PACKAGE ...]
#
# Run it from the project root on the build machine (needs apt-get), e.g.
#   dev/gpu-host/bundle.sh .gpu
#   echo /.gpu/ >> .git/info/exclude
# then, on the GPU host, from the project root:
#   . .gpu/env.sh && meson test -C build --no-rebuild --print-errorlogs
set -euo pipefail
dir=${1:?usage: bundle.sh DIR [EXTRA_PACKAGE ...]}; shift
# GStreamer's CUDA library, which the plugin links wherever the build found
# it (the README's set-up installs it), and its GL and window-system
# libraries, with the NVIDIA elements (nvh264dec, cudaupload) beside them.
cuda_gst="gstreamer1.0-plugins-bad libgstreamer-plugins-bad1.0-0 libgstreamer-gl1.0-0
libgudev-1.0-0 libgraphene-1.0-0 libpng16-16 libjpeg62-turbo libwayland-client0
libwayland-egl1 libwayland-cursor0 libwayland-server0 libx11-xcb1 libx11-6 libxcb1
libdrm2 libgbm1 libegl1 libgles2 libglvnd0 libgl1 libopengl0 libglx0 libxau6
libxdmcp6 libbsd0 libmd0 libxkbcommon0 libxcb-randr0 libxcb-xkb1 libxkbcommon-x11-0
libffi8 libexpat1 libxext6 libxrender1 libxcursor1 libxfixes3 libxi6"
base="libgstreamer1.0-0 libgstreamer-plugins-base1.0-0 gstreamer1.0-plugins-base
gstreamer1.0-plugins-good gstreamer1.0-tools liborc-0.4-0 liburing2 libcmocka0
libglib2.0-0 libunwind8 libdw1 libelf1 libcap2 meson libjson-glib-1.0-0 libvpx7
$cuda_gst"
mkdir -p "$dir/debs"
dir=$(cd "$dir" && pwd)
[ -n "$(ls /var/lib/apt/lists 2>/dev/null | grep -v -e lock -e partial)" ] || apt-get update -qq
# apt-get download writes into the current folder; run it as an unprivileged-safe copy
(cd "$dir/debs" && apt-get download -qq $base "$@" 2>&1 | grep -v 'unsandboxed' || true)
n=$(ls "$dir"/debs/*.deb 2>/dev/null | wc -l)
[ "$n" -gt 0 ] || { echo "bundle.sh: no packages were downloaded" >&2; exit 1; }
cp "$(dirname "$0")/env.sh" "$dir/env.sh"
echo "bundle.sh: $n packages, $(du -sh "$dir" | cut -f1) in $dir"
