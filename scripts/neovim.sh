#!/usr/bin/env bash
# Locate (installing once, from Debian's packages) Neovim, the real editor whose built-in LSP
# client `kiln lsp` is checked with (cli/tests/it/lsp_editor.rs). Prints the path of `nvim` on
# stdout. Exits non-zero, loudly, when it is missing and cannot be installed: the test that uses
# it fails rather than passing silently.
set -euo pipefail

if ! command -v nvim >/dev/null 2>&1; then
    if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
        echo "neovim.sh: nvim is not installed; install Neovim (Debian: apt-get install neovim)" >&2
        exit 1
    fi
    root="$(cd "$(dirname "$0")/.." && pwd)"
    mkdir -p "$root/target"
    # Tests run in parallel and may call this at the same time: one installs, the others wait.
    exec 9>"$root/target/neovim.lock"
    flock 9
    if ! command -v nvim >/dev/null 2>&1; then
        echo "neovim.sh: installing neovim (apt-get)" >&2
        apt-get update -qq >&2
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends neovim >&2
    fi
fi
command -v nvim
