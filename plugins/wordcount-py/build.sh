#!/usr/bin/env bash
# Builds plugins/wordcount-py/wordcount-py.wasm, a component of the world
# airlock:plugin/tool-plugin (wit/plugin), from app.py with componentize-py from PyPI.
#
#   plugins/wordcount-py/build.sh            build if app.py, the WIT or the build scripts changed
#   plugins/wordcount-py/build.sh --force    build anyway
#   plugins/wordcount-py/build.sh --check    build if needed, then load and call the component
#                                            with the PyPI `wasmtime` package (smoke.py)
#   WASI=full plugins/wordcount-py/build.sh
#       link the real WASI imports instead of stubs (see below)
#
# By default (WASI=stub) every WASI import is replaced by a trapping stub (componentize-py
# --stub-wasi): the component imports only airlock:plugin/log and airlock:plugin/types, which
# the gateway's plugin sandbox accepts as it is. The catch: print(), time and randomness trap
# at run time (Python's hash seed is baked in at build time), so log through `log`, not print.
# WASI=full keeps Python's usual imports: wasi:{cli,io,clocks,random,filesystem}/*@0.2.9 and
# also the seven wasi:sockets/*@0.2.9 interfaces (CPython's libc imports them, unused), which
# the sandbox refuses unless it grants `wasi:sockets/` (powerless under its WasiCtx: wasmtime-wasi
# denies TCP, UDP and name lookup unless allowed).
#
# Needs only python3 (>= 3.9; 3.11 for --check) with pip; the tools go into a virtualenv
# under the repo's target/ (target/py-plugin-venv), made once. On Debian without python3-venv
# (no ensurepip) the virtualenv is made --without-pip and filled by the system pip.
set -euo pipefail

COMPONENTIZE_PY_VERSION=0.25.1
WASMTIME_PY_VERSION=48.0.0 # the wasmtime the gateway links, for --check

# shellcheck source-path=SCRIPTDIR/.. source=build-steps.sh
source "$(dirname "$0")/../build-steps.sh"
# shellcheck source-path=SCRIPTDIR/../.. source=tests/python-venv.sh
source "$(dirname "$0")/../../tests/python-venv.sh"
plugin_setup "$@"

venv="$repo/target/py-plugin-venv"
stage="$repo/target/py-plugin-build/$name"

wasi="${WASI:-stub}"
case "$wasi" in
    stub | full) ;;
    *) echo "$0: WASI must be stub or full, not $wasi" >&2; exit 2 ;;
esac
mode="componentize-py $COMPONENTIZE_PY_VERSION wasi=$wasi"

ensure_venv() {
    make_venv "$venv"
    venv_pin "$venv" componentize-py "$COMPONENTIZE_PY_VERSION"
}

build() { # OUT
    ensure_venv
    # Build from a copy of app.py, so the plugin directory gets no __pycache__ from the
    # build-time pre-initialization and nothing else there is bundled.
    rm -rf "$stage"
    mkdir -p "$stage"
    cp "$here/app.py" "$stage/app.py"
    local flags=()
    if [ "$wasi" = stub ]; then flags+=(--stub-wasi); fi
    (cd "$stage" && env -u VIRTUAL_ENV PYTHONDONTWRITEBYTECODE=1 "$venv/bin/componentize-py" --quiet \
        -d "$wit" -w tool-plugin componentize app -p "$stage" "${flags[@]}" -o "$1")
}

# Rebuilt when anything is newer than the component: app.py, a WIT file, the build scripts.
plugin_build build "$here/app.py" "$here/build.sh" "$repo/plugins/build-steps.sh" "$wit"

if [ "$check" = 1 ]; then
    ensure_venv
    venv_pin "$venv" wasmtime "$WASMTIME_PY_VERSION"
    "$venv/bin/python" "$here/smoke.py" "$out"
fi
