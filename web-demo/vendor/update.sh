#!/usr/bin/env bash
# Refreshes the browser libraries the web demo embeds (marked, DOMPurify, highlight.js and its
# GitHub styles): installs the exact versions that
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
copy @highlightjs/cdn-assets/es/highlight.min.js highlight.min.js
# One stylesheet for both schemes: GitHub's colours, and GitHub Dark's when the system is dark.
styles=node_modules/@highlightjs/cdn-assets/styles
{
  cat "$styles/github.min.css"
  printf '\n@media (prefers-color-scheme: dark) {\n'
  cat "$styles/github-dark.min.css"
  printf '\n}\n'
} > highlight.css
echo "highlight.css <- github.min.css, github-dark.min.css ($(wc -c < highlight.css) bytes)"
