# SPDX-License-Identifier: LGPL-2.1-or-later
# Sourced by the pipeline scripts: finds the plugin in the build tree unless
# GST_PLUGIN_PATH already points somewhere.
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PP_BUILD=${PP_BUILD:-$here/../build}
if [ -z "${GST_PLUGIN_PATH:-}" ] && [ -d "$PP_BUILD/plugins" ]; then
  export GST_PLUGIN_PATH=$PP_BUILD/plugins
fi
# The python with GStreamer's bindings: Debian's, where a virtual
# environment's python3 may lack them (PP_GST_PYTHON names another).
PP_GST_PYTHON=${PP_GST_PYTHON:-/usr/bin/python3}
# Print cudamlp's stats message (posted at EOS) from gst-launch -m output,
# one field a line ("frames: 300"), nested structures (each device's
# figures, the start-up's) indented, as GStreamer itself parses them.
pp_print_stats() {
  grep -o 'application/x-cudamlp-stats.*' | "$PP_GST_PYTHON" -c '
import sys
import warnings
import gi
gi.require_version("Gst", "1.0")
from gi.repository import Gst
Gst.init(None)
warnings.simplefilter("ignore", DeprecationWarning)  # GValueArray, all GStreamer gives

def show(s, indent):
    for i in range(s.n_fields()):
        name = s.nth_field_name(i)
        if s.get_field_type(name).name == "GstValueArray":
            ok, items = s.get_array(name)
            print(f"{indent}{name}:")
            for item in [items.get_nth(j) for j in range(items.n_values)] if ok else []:
                if isinstance(item, Gst.Structure):
                    print(f"{indent}  {item.get_name()}:")
                    show(item, indent + "    ")
                else:
                    print(f"{indent}  {item}")
            continue
        value = s.get_value(name)
        if isinstance(value, Gst.Structure):
            print(f"{indent}{name}:")
            show(value, indent + "  ")
        else:
            print(f"{indent}{name}: {value}")

for line in sys.stdin:
    s = Gst.Structure.from_string(line.strip())[0]
    if s is None:
        print(line.rstrip())
        continue
    print(s.get_name())
    show(s, "  ")
'
}
# gst-launch-1.0 for the pipelines with cudamlp: pingpong-launch takes the
# same -m, -v, -q and -e and ends at the first error, where gst-launch-1.0
# 1.22 can wait for ever when two errors arrive while it prerolls (a
# refusal, then the source's "Internal data stream error").
pp_launch() {
  if [ -x "$PP_BUILD/tools/pingpong-launch" ]; then
    "$PP_BUILD/tools/pingpong-launch" "$@"
  elif command -v pingpong-launch > /dev/null; then
    pingpong-launch "$@"
  else
    gst-launch-1.0 "$@"
  fi
}
