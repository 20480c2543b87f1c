#!/usr/bin/env bash
# Install (once) and locate a Python with PyPI's `kcl-lib` (KCL's compiler and evaluator as a
# library), the tool kiln-bench compares kiln with (bench/kcl/). It lives in a virtual
# environment under target/, so nothing is installed system-wide and every machine gets the same
# version.
#
# Prints the path of that venv's python on stdout. Exits non-zero (loudly) when it cannot be
# installed: the bench then says the KCL comparison is missing and why.
set -euo pipefail

VERSION="0.13.2"
root="$(cd "$(dirname "$0")/.." && pwd)"
venv="${KILN_TOOLS_DIR:-$root/target/tools}/kcl-lib-$VERSION"
python_exe="$venv/bin/python"

mkdir -p "$(dirname "$venv")"
exec 9>"$venv.lock"
flock 9

if ! "$python_exe" -c 'import kcl_lib.api' 2>/dev/null; then
    python="$(command -v python3 || true)"
    if [ -z "$python" ]; then
        echo "kcl.sh: python3 not found; it is needed to install kcl-lib" >&2
        exit 1
    fi
    rm -rf "$venv"
    "$python" -m venv "$venv" >&2
    "$venv/bin/pip" install --quiet --disable-pip-version-check "kcl-lib==$VERSION" >&2
fi
"$python_exe" -c 'import kcl_lib.api' >&2
echo "$python_exe"
