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
# A wheel, built with the pinned hatchling from the venv (no build isolation, so nothing unpinned
# is fetched), installed in the venv: the tests see the package as users install it.
dist="$repo/target/python-client-dist"
rm -rf "$dist"
venv_pip "$venv" wheel --no-deps --no-build-isolation --wheel-dir "$dist" "$here"
wheel=("$dist"/airlock_client-*.whl)
venv_pip "$venv" install --no-deps --force-reinstall "${wheel[0]}"
# And an app's own virtualenv, made anew: the wheel and what it depends on, as pip resolves them
# for an app that adds it (the README's "Add it to your app"); test_readme.py runs the README's
# example there.
app="$repo/target/python-client-app"
rm -rf "$app"
make_venv "$app"
venv_pip "$app" install "${wheel[0]}"
export AIRLOCK_APP_PYTHON="$app/bin/python"

airlock="${AIRLOCK_BIN:-$repo/target/debug/airlock}"
if [ ! -x "$airlock" ]; then
    echo "python client: no gateway binary at $airlock (build it, or set AIRLOCK_BIN)" >&2
    exit 1
fi
export AIRLOCK_BIN="$airlock"

cd "$here"
exec "$venv/bin/python" -m pytest "$@"
