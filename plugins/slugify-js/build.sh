#!/usr/bin/env bash
# Builds plugins/slugify-js/slugify-js.wasm, a component of the world airlock:plugin/tool-plugin
# (wit/plugin), from slugify.js with `jco componentize` (ComponentizeJS: the StarlingMonkey JS
# engine, pre-initialized with the module) from npm.
#
#   plugins/slugify-js/build.sh            build if slugify.js, the WIT, the lockfile or the
#                                          build scripts changed
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

# shellcheck source-path=SCRIPTDIR/.. source=build-steps.sh
source "$(dirname "$0")/../build-steps.sh"
plugin_setup "$@"

source_js="$here/slugify.js"
tools="$repo/target/js-plugin-tools/$name"

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

build() { # OUT
    ensure_tools
    # Run from the plugin directory: componentize-js takes the working directory as the root of
    # the paths the engine sees (none are used here).
    (cd "$here" && "$tools/node_modules/.bin/jco" componentize "$source_js" "${flags[@]}" -o "$1" >/dev/null)
    check_imports "$1"
}

# Rebuilt when anything is newer than the component: the source, a WIT file, the lockfile, the
# build scripts.
plugin_build build "$source_js" "$here/package-lock.json" "$here/build.sh" \
    "$repo/plugins/build-steps.sh" "$wit"

if [ "$check" = 1 ]; then
    ensure_tools
    transpiled="$repo/target/js-plugin-build/$name-transpiled"
    rm -rf "$transpiled"
    "$tools/node_modules/.bin/jco" transpile "$out" -o "$transpiled" --name component \
        --instantiation async --no-typescript --quiet
    node "$here/smoke.mjs" "$transpiled/component.js"
fi
