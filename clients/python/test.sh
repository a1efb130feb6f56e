#!/usr/bin/env bash
# Runs the Python client's tests against the real gateway (target/debug/airlock, or $AIRLOCK_BIN).
# The pinned requirements go into a virtualenv under the repo's target/ (target/python-client-venv),
# made once and made again when requirements.txt changes; the client itself is reinstalled from
# its source on every run. Needs python3 (>= 3.10) with pip, and the network to PyPI the first
# time. Arguments are passed to pytest (e.g. `clients/python/test.sh -k restart -x`).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
venv="$repo/target/python-client-venv"
source "$repo/tests/python-venv.sh"

fresh_venv "$venv" "$here/requirements.txt" "python client"
# Built with the pinned hatchling from the venv (no build isolation, so nothing unpinned is
# fetched), not editable, so the tests see the package as users install it.
venv_pip "$venv" install --no-deps --no-build-isolation --force-reinstall "$here"

airlock="${AIRLOCK_BIN:-$repo/target/debug/airlock}"
if [ ! -x "$airlock" ]; then
    echo "python client: no gateway binary at $airlock (build it, or set AIRLOCK_BIN)" >&2
    exit 1
fi
export AIRLOCK_BIN="$airlock"

cd "$here"
exec "$venv/bin/python" -m pytest "$@"
