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
