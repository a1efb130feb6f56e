#!/usr/bin/env bash
# Refreshes the browser libraries the web demo embeds: installs the exact versions that
# package-lock.json pins, then copies their minified browser builds next to this script, where
# they are committed and `include_bytes!`ed by gateway/src/api/demo.rs (so building the gateway
# needs no npm). Each copy keeps its license header; only the trailing source-map comment goes,
# since the gateway serves no .map files. To move to newer versions: edit package.json, run
# `npm install` here to rewrite the lockfile, then run this script and commit the copies.
set -euo pipefail
cd "$(dirname "$0")"

npm ci --no-audit --no-fund

copy() {
  sed '/^\/\/# sourceMappingURL=/d' "node_modules/$1" > "$2"
  echo "$2 <- $1 ($(wc -c < "$2") bytes)"
}
copy marked/lib/marked.esm.js marked.esm.js
copy dompurify/dist/purify.min.js purify.min.js
