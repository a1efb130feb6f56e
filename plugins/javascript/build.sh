#!/usr/bin/env bash
# Builds plugins/javascript/javascript.wasm, the `javascript` code tool: javascript.js in the
# StarlingMonkey engine, a component of the world airlock:plugin/code-plugin (wit/plugin), with
# `jco componentize` (plugins/componentize-js.sh says how), pre-initialized.
#
#   plugins/javascript/build.sh            build if javascript.js, the WIT, the lockfile or the
#                                          build scripts changed
#   plugins/javascript/build.sh --force    build anyway
set -euo pipefail

# shellcheck source-path=SCRIPTDIR/.. source=build-steps.sh
source "$(dirname "$0")/../build-steps.sh"
plugin_setup "$@"
if [ "$check" = 1 ]; then
    echo "$0: --check is not offered; the gateway's tests call the component (code_tools::javascript_)" >&2
    exit 2
fi
source_js="$here/javascript.js"
world=code-plugin
# shellcheck source-path=SCRIPTDIR/.. source=componentize-js.sh
source "$repo/plugins/componentize-js.sh"
