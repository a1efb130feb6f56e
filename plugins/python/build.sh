#!/usr/bin/env bash
# Builds plugins/python/python.wasm, the `python` code tool: CPython and app.py as a component of
# the world airlock:plugin/tool-plugin (wit/plugin), with componentize-py from PyPI
# (plugins/componentize-py.sh says how), pre-initialized.
#
#   plugins/python/build.sh            build if app.py, the WIT or the build scripts changed
#   plugins/python/build.sh --force    build anyway
#
# Built with Python's real WASI imports (files in /workspace, print to a captured stream), and
# so with the wasi:sockets imports CPython's libc brings along: plugin.toml links them with no
# network (`import_sockets = true`).
set -euo pipefail

# shellcheck source-path=SCRIPTDIR/.. source=build-steps.sh
source "$(dirname "$0")/../build-steps.sh"
plugin_setup "$@"
if [ "$check" = 1 ]; then
    echo "$0: --check is not offered; the gateway's tests call the component (plugins::python_)" >&2
    exit 2
fi
wasi=full
# shellcheck source-path=SCRIPTDIR/.. source=componentize-py.sh
source "$repo/plugins/componentize-py.sh"
