#!/usr/bin/env bash
# Install (once) and locate the `kubernetes-validate` command from PyPI, the independent validator
# `kiln schema`'s CRDs are checked with (kubectl's dry-run needs a cluster). It lives in a virtual
# environment under target/, so nothing is installed system-wide and CI gets the same version.
#
# Prints the path of the executable on stdout. Exits non-zero (loudly) when it cannot be installed:
# the test that uses it fails rather than passing silently.
set -euo pipefail

VERSION="1.37.0" # keep in step with core/data/kubernetes/VERSION
root="$(cd "$(dirname "$0")/.." && pwd)"
venv="${KILN_TOOLS_DIR:-$root/target/tools}/kubernetes-validate-$VERSION"
exe="$venv/bin/kubernetes-validate"

# Tests run in parallel and may call this at the same time: one installs, the others wait.
mkdir -p "$(dirname "$venv")"
exec 9>"$venv.lock"
flock 9

# A virtual environment is tied to the path it was made at: a moved target/ (a renamed checkout,
# a copied cache) leaves an executable whose interpreter is gone. Such a one is made again.
if [ ! -x "$exe" ] || ! "$exe" --version >/dev/null 2>&1; then
    python="$(command -v python3 || true)"
    if [ -z "$python" ]; then
        echo "kubernetes-validate.sh: python3 not found; it is needed to install kubernetes-validate" >&2
        exit 1
    fi
    rm -rf "$venv"
    "$python" -m venv "$venv" >&2
    "$venv/bin/pip" install --quiet --disable-pip-version-check "kubernetes-validate==$VERSION" >&2
fi
"$exe" --version >/dev/null
echo "$exe"
