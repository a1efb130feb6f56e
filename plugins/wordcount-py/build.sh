#!/usr/bin/env bash
# Builds plugins/wordcount-py/wordcount-py.wasm, a component of the world
# airlock:plugin/tool-plugin (wit/plugin), from app.py with componentize-py from PyPI
# (plugins/componentize-py.sh says how).
#
#   plugins/wordcount-py/build.sh            build if app.py, the WIT or the build scripts changed
#   plugins/wordcount-py/build.sh --force    build anyway
#   plugins/wordcount-py/build.sh --check    build if needed, then load and call the component
#                                            with the PyPI `wasmtime` package (smoke.py)
#   WASI=full plugins/wordcount-py/build.sh  link the real WASI imports instead of stubs
#
# By default (WASI=stub) every WASI import is a trapping stub: the component imports only
# airlock:plugin/log and airlock:plugin/types, which the gateway's plugin sandbox accepts as it
# is. The catch: print(), time and randomness trap at run time, so log through `log`.
set -euo pipefail

# shellcheck source-path=SCRIPTDIR/.. source=build-steps.sh
source "$(dirname "$0")/../build-steps.sh"
plugin_setup "$@"
wasi="${WASI:-stub}"
# shellcheck source-path=SCRIPTDIR/.. source=componentize-py.sh
source "$repo/plugins/componentize-py.sh"
