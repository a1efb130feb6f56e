#!/usr/bin/env bash
# Installs schemathesis, pinned by tests/schemathesis/requirements.txt, into a virtualenv under the
# repo's target/ (target/schemathesis-venv), for tests/tests/all/schemathesis.rs. Made once; run
# again after the pins change. Needs only python3 (>= 3.10) with pip.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
venv="$repo/target/schemathesis-venv"
source "$repo/tests/python-venv.sh"

fresh_venv "$venv" "$here/requirements.txt" schemathesis
