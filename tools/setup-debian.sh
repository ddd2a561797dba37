#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Everything a fresh Debian 12 machine needs, then a build in ./build and the
# main pipeline (pipelines/fakesrc-latency.sh) as proof that it works.
#
#   tools/setup-debian.sh            # as root, or a user with sudo
#   PP_RUN_PIPELINE=0 tools/setup-debian.sh    # set up and build only
#
# CUDA: when nvcc is on PATH or in /usr/local/cuda/bin the CUDA backend is
# built (PP_CUDA=enabled makes its absence an error), and with it input in
# CUDA memory through GStreamer's CUDA library (libgstreamer-plugins-bad1.0-dev).
# Test clips are made with vp8enc (-good) and x264enc (-ugly) and decoded with
# -good's and -libav's decoders. The exporter and the examples run on Debian's
# python3 (PyTorch, numpy, GStreamer's bindings); the tests also read files
# back with safetensors from PyPI, in ./.venv.
set -euo pipefail
cd "$(dirname "$0")/.."
sudo=""
[ "$(id -u)" -eq 0 ] || sudo=sudo

packages=(
  build-essential meson ninja-build pkg-config time
  libglib2.0-dev libgstreamer1.0-dev libgstreamer-plugins-base1.0-dev
  libgstreamer-plugins-bad1.0-dev
  gstreamer1.0-plugins-base gstreamer1.0-plugins-good gstreamer1.0-plugins-ugly
  gstreamer1.0-plugins-bad  # gdppay/gdpdepay for pipelines/sender.sh and receiver.sh
  gstreamer1.0-tools
  iproute2  # the network pair's test between two network namespaces
  liburing-dev libcmocka-dev libjson-glib-dev
  libmosquitto-dev mosquitto mosquitto-clients  # scorepublish, and its test's broker
  gir1.2-gst-rtsp-server-1.0  # the cameras test's RTSP camera
  python3 python3-venv python3-pip python3-numpy python3-torch python3-matplotlib
  python3-onnx  # pingpong-export reads ONNX files
  python3-gi gir1.2-gstreamer-1.0 gir1.2-gst-plugins-base-1.0  # examples/scores.py
  gstreamer1.0-libav  # H.264 and other decoders for users' own clips
  clang-format
  clang libclang-rt-14-dev  # the model loader's libFuzzer target (tests/fuzz)
)
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${packages[@]}"

# safetensors is not packaged for bookworm; the venv sees Debian's torch/numpy.
if [ ! -x .venv/bin/python3 ]; then
  /usr/bin/python3 -m venv --system-site-packages .venv
fi
.venv/bin/pip install -q --disable-pip-version-check 'safetensors==0.8.0'

for dir in /usr/local/cuda/bin /usr/local/cuda-13.0/bin; do
  [ -x "$dir/nvcc" ] && case ":$PATH:" in *":$dir:"*) ;; *) PATH=$dir:$PATH ;; esac
done
export PATH
options=(--prefix=/usr -Dcuda="${PP_CUDA:-auto}" -Dpython="$PWD/.venv/bin/python3" -Dpython-tests=enabled)
if [ -f build/meson-private/coredata.dat ]; then
  meson setup --reconfigure build "${options[@]}"
else
  # nvcc through tools/nvcc-deps, so that editing a header the kernels
  # include rebuilds them (the file names it by its absolute path).
  mkdir -p build
  printf "[binaries]\ncuda = '%s'\n" "$PWD/tools/nvcc-deps" > build/nvcc-deps.ini
  meson setup build --native-file build/nvcc-deps.ini "${options[@]}"
fi
ninja -C build

if [ "${PP_RUN_PIPELINE:-1}" != 0 ]; then
  pipelines/fakesrc-latency.sh
fi
