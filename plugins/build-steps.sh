# shellcheck shell=bash
# The steps every plugin's build script (plugins/NAME/build.sh) takes. Sourced, not run:
#
#   source "$(dirname "$0")/../build-steps.sh"
#   plugin_setup "$@"          # arguments, and the plugin's layout
#   mode="..."                 # what a build depends on besides files
#   plugin_build build SOURCES...

# Reads the build script's arguments into `force` and `check` (-h prints the script's header),
# and sets what every plugin's layout has: `here` (the plugin's directory, the script's), `repo`,
# `name` (the directory's), `out` (the component, plugins/NAME/NAME.wasm), `wit` (the WIT of the
# plugin world) and `stamp` (under target/: the mode `out` was built in).
# shellcheck disable=SC2034 # the build script reads them
plugin_setup() { # ARGUMENTS...
    force=0
    check=0
    local arg
    for arg in "$@"; do
        case "$arg" in
            --force) force=1 ;;
            --check) check=1 ;;
            -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d'; exit 0 ;;
            *) echo "$0: unknown argument $arg" >&2; exit 2 ;;
        esac
    done
    here="$(cd "$(dirname "$0")" && pwd)"
    repo="$(cd "$here/../.." && pwd)"
    name="$(basename "$here")"
    out="$here/$name.wasm"
    wit="$repo/wit/plugin"
    stamp="$repo/target/plugin-build/$name.stamp"
}

# Builds $out with the function BUILD, given the path to write the component to, unless it is up
# to date: built in this $mode (and --force not given), and none of SOURCES newer. Then stamps it.
# shellcheck disable=SC2154 # the build script sets `mode`
plugin_build() { # BUILD SOURCES...
    local build="$1" start tmp="$out.tmp.$$"
    shift
    if [ "$force" = 0 ] && [ -f "$out" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$mode" ] \
        && [ -z "$(find "$@" -newer "$out" -print -quit)" ]; then
        echo "$name: $out is up to date" >&2
        return 0
    fi
    start=$(date +%s)
    trap 'rm -f "$out.tmp.$$"' EXIT
    "$build" "$tmp"
    mv -f "$tmp" "$out"
    mkdir -p "$(dirname "$stamp")"
    echo "$mode" >"$stamp"
    echo "$name: built $out ($(wc -c <"$out") bytes; $mode) in $(($(date +%s) - start))s" >&2
}
