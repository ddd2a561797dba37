# SPDX-License-Identifier: LGPL-2.1-or-later
# Source this on the GPU host from the project root:  . .gpu/env.sh
# Unpacks the bundled Debian packages once into $PPGPU_ROOT and points the
# dynamic linker, GStreamer, GObject introspection and meson at them.
# Plugins whose own libraries are missing are left out of the plugin path,
# so the registry stays quiet.
_here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export PPGPU_ROOT=${PPGPU_ROOT:-/opt/ppgpu}
_lib=$PPGPU_ROOT/usr/lib/x86_64-linux-gnu
if [ ! -e "$PPGPU_ROOT/.unpacked" ]; then
  mkdir -p "$PPGPU_ROOT"
  for _f in "$_here"/debs/*.deb; do dpkg -x "$_f" "$PPGPU_ROOT"; done
  touch "$PPGPU_ROOT/.unpacked"
fi
export LD_LIBRARY_PATH=$_lib:$PPGPU_ROOT/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
if [ ! -d "$PPGPU_ROOT/plugins" ]; then
  mkdir -p "$PPGPU_ROOT/plugins"
  # The dynamic loader lists what a plugin needs (ldd is not on every image).
  _ld=$(ls /lib64/ld-linux-x86-64.so.2 /lib/x86_64-linux-gnu/ld-linux-x86-64.so.2 2>/dev/null | head -1)
  for _p in "$_lib"/gstreamer-1.0/*.so; do
    _needs=$("$_ld" --list "$_p" 2>&1) || continue
    echo "$_needs" | grep -q 'not found' || ln -sf "$_p" "$PPGPU_ROOT/plugins/"
  done
fi
export GST_PLUGIN_SYSTEM_PATH=$PPGPU_ROOT/plugins
export GST_PLUGIN_SCANNER=$_lib/gstreamer1.0/gstreamer-1.0/gst-plugin-scanner
export GST_REGISTRY=$PPGPU_ROOT/registry.bin
export PYTHONPATH=$PPGPU_ROOT/usr/lib/python3/dist-packages${PYTHONPATH:+:$PYTHONPATH}
export PATH=$PPGPU_ROOT/usr/bin:$PPGPU_ROOT/usr/sbin:$PATH
export GI_TYPELIB_PATH=$_lib/girepository-1.0
# The host's own python is of another version than Debian's GStreamer
# bindings: the scripts that need them (pipelines/cameras.sh, the camera
# tests) run the bundle's python where it has one.
[ -x "$PPGPU_ROOT/usr/bin/python3.11" ] && export PP_GST_PYTHON=$PPGPU_ROOT/usr/bin/python3.11
unset _here _lib _f _p _ld _needs
