# SPDX-License-Identifier: LGPL-2.1-or-later
# Sourced by the pipeline scripts: finds the plugin in the build tree unless
# GST_PLUGIN_PATH already points somewhere.
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PP_BUILD=${PP_BUILD:-$here/../build}
if [ -z "${GST_PLUGIN_PATH:-}" ] && [ -d "$PP_BUILD/plugins" ]; then
  export GST_PLUGIN_PATH=$PP_BUILD/plugins
fi
# Print cudamlp's stats message (posted at EOS) from gst-launch -m output.
pp_print_stats() {
  grep -o 'application/x-cudamlp-stats.*' | sed 's/, /\n  /g'
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
