#!/usr/bin/env bash
# Builds plugins/slugify-js/slugify-js.wasm, a component of the world airlock:plugin/tool-plugin
# (wit/plugin), from slugify.js with `jco componentize` (plugins/componentize-js.sh says how).
#
#   plugins/slugify-js/build.sh            build if slugify.js, the WIT, the lockfile or the
#                                          build scripts changed
#   plugins/slugify-js/build.sh --force    build anyway
#   plugins/slugify-js/build.sh --check    build if needed, then run the component under Node
#                                          (jco transpile) and call it (smoke.mjs)
set -euo pipefail

# shellcheck source-path=SCRIPTDIR/.. source=build-steps.sh
source "$(dirname "$0")/../build-steps.sh"
plugin_setup "$@"
source_js="$here/slugify.js"
world=tool-plugin
# shellcheck source-path=SCRIPTDIR/.. source=componentize-js.sh
source "$repo/plugins/componentize-js.sh"
