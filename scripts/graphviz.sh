#!/usr/bin/env bash
# Locate (installing once, from Debian's packages) Graphviz's `dot`, the real parser `kiln graph
# --format dot` is checked with. Prints the path of `dot` on stdout. Exits non-zero, loudly, when
# it is missing and cannot be installed: the test that uses it fails rather than passing silently.
set -euo pipefail

if ! command -v dot >/dev/null 2>&1; then
    if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
        echo "graphviz.sh: dot is not installed; install Graphviz (Debian: apt-get install graphviz)" >&2
        exit 1
    fi
    root="$(cd "$(dirname "$0")/.." && pwd)"
    mkdir -p "$root/target"
    # Tests run in parallel and may call this at the same time: one installs, the others wait.
    exec 9>"$root/target/graphviz.lock"
    flock 9
    if ! command -v dot >/dev/null 2>&1; then
        echo "graphviz.sh: installing graphviz (apt-get)" >&2
        apt-get update -qq >&2
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends graphviz >&2
    fi
fi
command -v dot
