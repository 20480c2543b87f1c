#!/usr/bin/env bash
# Mutation testing of the modules that decide what gets rendered (issue 30). Not part of CI: one
# mutant is a rebuild plus the tests that can see it, a minute or two each on a 2-core machine.
#
#   scripts/mutants.sh [RUN...]      runs: enablement component-patch render-includewhen-foreach
#                                          cmp-guards flux-envsubst-shard kurel-patch (default: the first five)
#
# Needs cargo-mutants (`cargo install --locked cargo-mutants`; measured with 27.1.0). Each run
# mutates a scratch worktree of HEAD in place (target/mutants-tree: the work tree is never
# touched) and builds into target/ so dependencies are not rebuilt. Results, per run:
# target/mutants/RUN/mutants.out/{caught,missed,timeout,unviable}.txt; figures in
# docs/ARCHITECTURE.md (Testing). A missed mutant is either killed by a new test or explained
# there as equivalent.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
command -v cargo-mutants >/dev/null || { echo "cargo-mutants is missing: cargo install --locked cargo-mutants" >&2; exit 1; }
tree=$root/target/mutants-tree
git worktree remove --force "$tree" 2>/dev/null || true
git worktree add --detach "$tree" HEAD >/dev/null
trap 'git -C "$root" worktree remove --force "$tree"' EXIT
export CARGO_TARGET_DIR=$root/target
# --timeout 600: the CLI's integration tests are one binary (`--test it`), and cargo-mutants cannot
# pass a name filter to it without filtering kiln-core's unit tests too, so each mutant runs all
# of them (about 250 s on a busy 2-core machine).
run() {
  local name=$1; shift
  echo "== $name"
  (cd "$tree" && cargo mutants --in-place --baseline skip --timeout 600 --build-timeout 900 \
     -o "$root/target/mutants/$name" "$@") || true
  for f in caught missed timeout unviable; do
    printf '  %-8s %s\n' "$f" "$(wc -l < "$root/target/mutants/$name/mutants.out/$f.txt")"
  done
}
runs=("$@")
[ ${#runs[@]} -gt 0 ] || runs=(enablement component-patch render-includewhen-foreach cmp-guards flux-envsubst-shard)
for r in "${runs[@]}"; do
  case $r in
    # The golden suite runs every testdata case through the kiln binary; kiln-core's unit tests.
    enablement) run "$r" --file core/src/kurel/enablement.rs --test-package kiln-core --test-package kiln -- --lib --bins --test it ;;
    kurel-patch) run "$r" --file core/src/kurel/patch.rs --test-package kiln-core --test-package kiln -- --lib --bins --test it ;;
    component-patch) run "$r" --file core/src/component/patch.rs --test-package kiln-core --test-package kiln -- --lib --bins --test it ;;
    render-includewhen-foreach) run "$r" --file core/src/render.rs --re 'step|expand|strip_omitted' --test-package kiln-core --test-package kiln -- --lib --bins --test it ;;
    cmp-guards) run "$r" --file plugin-argocd-cmp/src/generate.rs --re 'in (place|finish|generate|normalise)$' --test-package kiln-cmp ;;
    # envsubst has ~300 mutants: one tenth per run (--shard K/10 picks which).
    flux-envsubst-shard) run "$r" --file core/src/flux/envsubst.rs --shard "${SHARD:-0/10}" --test-package kiln-core --test-package kiln-flux -- --lib --tests ;;
    *) echo "unknown run $r" >&2; exit 2 ;;
  esac
done
