#!/usr/bin/env bash
# Installs schemathesis, pinned by tests/schemathesis/requirements.txt, into a virtualenv under the
# repo's target/ (target/schemathesis-venv), for tests/tests/all/schemathesis.rs. Made once; run
# again after the pins change. Needs only python3 (>= 3.10) with pip.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
venv="$repo/target/schemathesis-venv"
python="${PYTHON:-python3}"
stamp="$venv/.requirements"

if [ -x "$venv/bin/st" ] && cmp -s "$here/requirements.txt" "$stamp"; then
    echo "schemathesis: $venv is up to date" >&2
    exit 0
fi
mkdir -p "$(dirname "$venv")"
if [ ! -x "$venv/bin/python" ]; then
    # On Debian without python3-venv (no ensurepip) the virtualenv is made --without-pip and
    # filled by the system pip.
    if ! "$python" -m venv "$venv" 2>/dev/null; then
        rm -rf "$venv"
        "$python" -m venv --without-pip "$venv"
    fi
fi
if [ -x "$venv/bin/pip" ]; then
    "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$here/requirements.txt"
else
    "$python" -m pip --python "$venv/bin/python" install --quiet --disable-pip-version-check \
        -r "$here/requirements.txt"
fi
cp "$here/requirements.txt" "$stamp"
echo "schemathesis: installed $("$venv/bin/st" --version) into $venv" >&2
