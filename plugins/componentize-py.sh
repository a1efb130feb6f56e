# shellcheck shell=bash
# Builds a Python plugin, plugins/NAME/NAME.wasm, a component of the world airlock:plugin/tool-plugin
# (wit/plugin), from plugins/NAME/app.py with componentize-py from PyPI. Sourced by the plugin's
# build.sh after `plugin_setup`, with `wasi` set:
#
#   stub  every WASI import is replaced by a trapping stub (componentize-py --stub-wasi): the
#         component imports only airlock:plugin/log and airlock:plugin/types. print(), time,
#         files and randomness trap at run time (the hash seed is baked in at build time).
#   full  Python's usual imports: wasi:{cli,io,clocks,random,filesystem}/*@0.2.9 and the seven
#         wasi:sockets/*@0.2.9 interfaces CPython's libc imports, which the sandbox refuses
#         unless the manifest says `import_sockets = true` (linked with no network: every
#         connect, bind and lookup is denied).
#
# componentize-py pre-initializes the component: app.py and everything it imports are loaded at
# build time, so a call pays no interpreter start-up. Needs only python3 (>= 3.9; 3.11 for a
# --check with the PyPI `wasmtime`) with pip; the tools go into a virtualenv under the repo's
# target/ (target/py-plugin-venv), made once.

COMPONENTIZE_PY_VERSION=0.25.1
WASMTIME_PY_VERSION=48.0.0 # the wasmtime the gateway links, for --check

# shellcheck source-path=SCRIPTDIR/.. source=tests/python-venv.sh
source "$repo/tests/python-venv.sh"

venv="$repo/target/py-plugin-venv"
stage="$repo/target/py-plugin-build/$name"

case "$wasi" in
    stub | full) ;;
    *) echo "$0: WASI must be stub or full, not $wasi" >&2; exit 2 ;;
esac
# shellcheck disable=SC2034 # plugin_build reads it
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
    (cd "$stage" && env -i PATH="$PATH" HOME="$HOME" PYTHONDONTWRITEBYTECODE=1 \
        "$venv/bin/componentize-py" --quiet -d "$wit" -w tool-plugin componentize app \
        -p "$stage" "${flags[@]}" -o "$1")
}

# Rebuilt when anything is newer than the component: app.py, a WIT file, the build scripts.
plugin_build build "$here/app.py" "$here/build.sh" "$repo/plugins/build-steps.sh" \
    "$repo/plugins/componentize-py.sh" "$wit"

if [ "$check" = 1 ]; then
    ensure_venv
    venv_pin "$venv" wasmtime "$WASMTIME_PY_VERSION"
    "$venv/bin/python" "$here/smoke.py" "$out"
fi
