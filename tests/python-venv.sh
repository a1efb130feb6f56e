# shellcheck shell=bash
# Virtualenvs under the repo's target/ for the scripts that need Python tools (the Python
# client's tests, schemathesis, componentize-py, the anthropic SDK). Sourced:
#
#   source "$repo/tests/python-venv.sh"
#   fresh_venv "$venv" "$here/requirements.txt" "what"   # made anew when the pins changed
#   venv_pin "$venv" tool 1.2.3                           # tool==1.2.3 unless it is there
#   venv_pip "$venv" install "tool==1.2.3"                # pip of that virtualenv
#
# or run, for a virtualenv that is only its pins:
#
#   tests/python-venv.sh target/anthropic-venv tests/anthropic-sdk/requirements.txt anthropic
#
# (`pinned_venv` and `fresh_venv` are never a condition themselves: `set -e` does not stop inside
# one.)
#
# On Debian without python3-venv (no ensurepip) a virtualenv is made --without-pip and filled by
# the system pip. $PYTHON picks the interpreter (python3 by default; >= 3.10 with pip).

python="${PYTHON:-python3}"

# Makes the virtualenv VENV unless it exists.
make_venv() { # VENV
    [ -x "$1/bin/python" ] && return 0
    mkdir -p "$(dirname "$1")"
    if ! "$python" -m venv "$1" 2>/dev/null; then
        rm -rf "$1"
        "$python" -m venv --without-pip "$1"
    fi
}

# Runs pip for the virtualenv VENV, quietly: its own, or the system pip pointed at it.
venv_pip() { # VENV pip-arguments...
    local venv="$1"
    shift
    if [ -x "$venv/bin/pip" ]; then
        "$venv/bin/pip" --quiet --disable-pip-version-check "$@"
    else
        "$python" -m pip --python "$venv/bin/python" --quiet --disable-pip-version-check "$@"
    fi
}

# Whether VENV is missing or was made from other pins than REQUIREMENTS (a stamp inside it keeps
# the file it was made from).
stale_venv() { # VENV REQUIREMENTS
    ! { [ -x "$1/bin/python" ] && cmp -s "$2" "$1/.requirements"; }
}

# Makes VENV anew with exactly the pins of REQUIREMENTS, and stamps it.
pinned_venv() { # VENV REQUIREMENTS
    local venv="$1" requirements="$2"
    rm -rf "$venv"
    make_venv "$venv"
    venv_pip "$venv" install -r "$requirements"
    cp "$requirements" "$venv/.requirements"
}

# Makes VENV anew with the pins of REQUIREMENTS when it is stale, and says which on stderr, as WHAT.
fresh_venv() { # VENV REQUIREMENTS WHAT
    if stale_venv "$1" "$2"; then
        pinned_venv "$1" "$2"
        echo "$3: made $1 from $2" >&2
    else
        echo "$3: $1 is up to date" >&2
    fi
}

# Installs PACKAGE==VERSION into the virtualenv VENV unless that version is there already.
venv_pin() { # VENV PACKAGE VERSION
    local installed
    installed="$("$1/bin/python" -c 'import importlib.metadata as m, sys; print(m.version(sys.argv[1]))' \
        "$2" 2>/dev/null || true)"
    if [ "$installed" != "$3" ]; then
        echo "$(basename "$1"): installing $2==$3" >&2
        venv_pip "$1" install "$2==$3"
    fi
}

# Run rather than sourced, `tests/python-venv.sh VENV REQUIREMENTS WHAT` makes VENV fresh from
# REQUIREMENTS (the virtualenvs that need nothing else).
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    set -euo pipefail
    fresh_venv "$@"
fi
