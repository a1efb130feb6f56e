#!/usr/bin/env bash
# Builds plugins/slugify-js/slugify-js.wasm, a component of the world airlock:plugin/tool-plugin
# (wit/plugin), from slugify.js with `jco componentize` (ComponentizeJS: the StarlingMonkey JS
# engine, pre-initialized with the module) from npm.
#
#   plugins/slugify-js/build.sh            build if slugify.js, the WIT, the lockfile or this
#                                          script changed
#   plugins/slugify-js/build.sh --force    build anyway
#   plugins/slugify-js/build.sh --check    build if needed, then run the component under Node
#                                          (jco transpile) and call it (smoke.mjs)
#
# Built with every optional engine feature off (`--disable all`: stdio, clocks, random, http,
# fetch-event), so the component imports only airlock:plugin/log and airlock:plugin/types, which
# the gateway's plugin sandbox accepts as it is; each build checks that with `jco wit`. The catch:
# console.log goes nowhere, Date.now() traps and Math.random() is not random, so log through
# `log`. The tools (versions pinned by package.json and package-lock.json next to this script)
# are installed with `npm ci` under the repo's target/ (target/js-plugin-tools/slugify-js), again
# whenever the lockfile changes. Needs node (>= 20) and npm.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
name="$(basename "$here")"
source_js="$here/slugify.js"
out="$here/$name.wasm"
wit="$repo/wit/plugin"
tools="$repo/target/js-plugin-tools/$name"
stamp="$repo/target/js-plugin-build/$name.stamp"

force=0
check=0
for arg in "$@"; do
    case "$arg" in
        --force) force=1 ;;
        --check) check=1 ;;
        -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d'; exit 0 ;;
        *) echo "$0: unknown argument $arg" >&2; exit 2 ;;
    esac
done

features=(--disable all)
flags=(--wit "$wit" --world-name tool-plugin "${features[@]}")
# What the stamp records: a build with other tools or features is redone.
mode="lockfile $(sha256sum "$here/package-lock.json" | cut -c1-16) ${features[*]}"

ensure_tools() {
    # npm ci wipes and refills node_modules: only when the lockfile differs from the one installed.
    if ! cmp -s "$here/package-lock.json" "$tools/package-lock.json" || [ ! -x "$tools/node_modules/.bin/jco" ]; then
        echo "$name: installing jco and componentize-js into $tools (npm ci)" >&2
        mkdir -p "$tools"
        cp "$here/package.json" "$here/package-lock.json" "$tools/"
        npm ci --prefix "$tools" --no-audit --no-fund --loglevel=error >&2
    fi
}

up_to_date() {
    [ "$force" = 0 ] && [ -f "$out" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$mode" ] || return 1
    # Anything newer than the component: the source, a WIT file, the lockfile, this script.
    [ -z "$(find "$source_js" "$here/package-lock.json" "$here/build.sh" "$wit" -newer "$out" -print -quit)" ]
}

# What the gateway's sandbox links for every plugin (crates/sandbox/src/plugins/mod.rs: ALWAYS_GRANTED);
# this plugin has no grants, so wasi:http would be refused.
check_imports() { # component
    local imports refused
    imports="$("$tools/node_modules/.bin/jco" wit "$1" | sed -n 's/^ *import \([^;]*\);$/\1/p')"
    refused="$(grep -Ev '^(wasi:(cli|io|clocks|random|filesystem)/|airlock:plugin/(log|types)@)' <<<"$imports" || true)"
    if [ -n "$refused" ]; then
        echo "$name: the component imports what the plugin sandbox refuses: $(tr '\n' ' ' <<<"$refused")" >&2
        return 1
    fi
    echo "$name: imports $(tr '\n' ' ' <<<"$imports")" >&2
}

if up_to_date; then
    echo "$name: $out is up to date" >&2
else
    ensure_tools
    start=$(date +%s)
    tmp="$out.tmp.$$"
    trap 'rm -f "$tmp"' EXIT
    # Run from the plugin directory: componentize-js takes the working directory as the root of
    # the paths the engine sees (none are used here).
    (cd "$here" && "$tools/node_modules/.bin/jco" componentize "$source_js" "${flags[@]}" -o "$tmp" >/dev/null)
    check_imports "$tmp"
    mv -f "$tmp" "$out"
    mkdir -p "$(dirname "$stamp")"
    echo "$mode" >"$stamp"
    echo "$name: built $out ($(wc -c <"$out") bytes) in $(($(date +%s) - start))s" >&2
fi

if [ "$check" = 1 ]; then
    ensure_tools
    transpiled="$repo/target/js-plugin-build/$name-transpiled"
    rm -rf "$transpiled"
    "$tools/node_modules/.bin/jco" transpile "$out" -o "$transpiled" --name component \
        --instantiation async --no-typescript --quiet
    node "$here/smoke.mjs" "$transpiled/component.js"
fi
