#!/usr/bin/env bash
# The TypeScript client: install the locked dependencies, build dist/, and run the tests against a
# real `airlock serve`. It builds no Rust: the gateway is $AIRLOCK_BIN, by default the one that
# `cargo build -p airlock-gateway` leaves in target/debug.
set -euo pipefail
cd "$(dirname "$0")"

export AIRLOCK_BIN="${AIRLOCK_BIN:-$(cd ../.. && pwd)/target/debug/airlock}"
if [ ! -x "$AIRLOCK_BIN" ]; then
  echo "test.sh: no gateway at $AIRLOCK_BIN (build it with cargo build -p airlock-gateway)" >&2
  exit 1
fi

npm ci --no-audit --no-fund
# The build generates the types from ../openapi.json, which a test of the gateway holds equal to
# what a plain gateway serves.
npm test   # builds dist/ and the tests, then node --test
