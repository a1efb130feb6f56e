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
python="${PYTHON:-python3}"
stamp="$venv/.requirements"
pip_flags=(--quiet --disable-pip-version-check)

if ! { [ -x "$venv/bin/python" ] && cmp -s "$here/requirements.txt" "$stamp"; }; then
    rm -rf "$venv"
    mkdir -p "$(dirname "$venv")"
    # On Debian without python3-venv (no ensurepip) the virtualenv is made --without-pip and
    # filled by the system pip.
    if ! "$python" -m venv "$venv" 2>/dev/null; then
        rm -rf "$venv"
        "$python" -m venv --without-pip "$venv"
    fi
    if [ -x "$venv/bin/pip" ]; then
        "$venv/bin/pip" install "${pip_flags[@]}" -r "$here/requirements.txt"
    else
        "$python" -m pip --python "$venv/bin/python" install "${pip_flags[@]}" \
            -r "$here/requirements.txt"
    fi
    cp "$here/requirements.txt" "$stamp"
    echo "python client: made $venv" >&2
fi

pip=("$venv/bin/python" -m pip)
if [ ! -x "$venv/bin/pip" ]; then
    pip=("$python" -m pip --python "$venv/bin/python")
fi
# Built with the pinned hatchling from the venv (no build isolation, so nothing unpinned is
# fetched), not editable, so the tests see the package as users install it.
"${pip[@]}" install "${pip_flags[@]}" --no-deps --no-build-isolation --force-reinstall "$here"

airlock="${AIRLOCK_BIN:-$repo/target/debug/airlock}"
if [ ! -x "$airlock" ]; then
    echo "python client: no gateway binary at $airlock (build it, or set AIRLOCK_BIN)" >&2
    exit 1
fi
export AIRLOCK_BIN="$airlock"

cd "$here"
exec "$venv/bin/python" -m pytest "$@"
