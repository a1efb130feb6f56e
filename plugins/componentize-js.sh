# shellcheck shell=bash
# Builds a JavaScript plugin, plugins/NAME/NAME.wasm, from one module with `jco componentize`
# (ComponentizeJS: the StarlingMonkey JS engine, pre-initialized with the module) from npm.
# Sourced by the plugin's build.sh after `plugin_setup`, with `source_js` (the module) and
# `world` (tool-plugin, or code-plugin for the `workspace` import) set.
#
# Built with every optional engine feature off (`--disable all`: stdio, clocks, random, http,
# fetch-event), so the component imports only airlock:plugin interfaces, which the gateway's
# plugin sandbox accepts (`workspace` when the manifest grants it); each build checks that with
# `jco wit`. The catch: console.log goes nowhere, Date.now() traps and Math.random() is not
# random. The tools (versions pinned by plugins/js-tools/package.json and package-lock.json) are
# installed with `npm ci` under the repo's target/ (target/js-plugin-tools), again whenever the
# lockfile changes. Needs node (>= 20) and npm.

lock="$repo/plugins/js-tools"
tools="$repo/target/js-plugin-tools"

features=(--disable all)
flags=(--wit "$wit" --world-name "$world" "${features[@]}")
# What the stamp records: a build with other tools, features or world is redone.
# shellcheck disable=SC2034 # plugin_build reads it
mode="lockfile $(sha256sum "$lock/package-lock.json" | cut -c1-16) ${features[*]} $world"

ensure_tools() {
    # npm ci wipes and refills node_modules: only when the lockfile differs from the one installed.
    if ! cmp -s "$lock/package-lock.json" "$tools/package-lock.json" || [ ! -x "$tools/node_modules/.bin/jco" ]; then
        echo "$name: installing jco and componentize-js into $tools (npm ci)" >&2
        mkdir -p "$tools"
        cp "$lock/package.json" "$lock/package-lock.json" "$tools/"
        npm ci --prefix "$tools" --no-audit --no-fund --loglevel=error >&2
    fi
}

# What the gateway's sandbox links for every plugin (crates/sandbox/src/plugins/mod.rs:
# ALWAYS_GRANTED), and `workspace` for the world that imports it.
check_imports() { # component
    local imports refused
    imports="$("$tools/node_modules/.bin/jco" wit "$1" | sed -n 's/^ *import \([^;]*\);$/\1/p')"
    refused="$(grep -Ev '^(wasi:(cli|io|clocks|random|filesystem)/|airlock:plugin/(log|types|workspace)@)' <<<"$imports" || true)"
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
plugin_build build "$source_js" "$lock/package-lock.json" "$here/build.sh" \
    "$repo/plugins/build-steps.sh" "$repo/plugins/componentize-js.sh" "$wit"

if [ "$check" = 1 ]; then
    ensure_tools
    transpiled="$repo/target/js-plugin-build/$name-transpiled"
    rm -rf "$transpiled"
    "$tools/node_modules/.bin/jco" transpile "$out" -o "$transpiled" --name component \
        --instantiation async --no-typescript --quiet
    node "$here/smoke.mjs" "$transpiled/component.js"
fi
