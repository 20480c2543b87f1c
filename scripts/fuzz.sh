#!/usr/bin/env bash
# Fuzz kiln-core: scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]
#
# Installs cargo-fuzz into target/tools/cargo-fuzz if it is missing, builds the targets of fuzz/,
# builds each target's seed corpus from testdata/, then runs the targets one after the other for
# SECONDS_PER_TARGET seconds each (default 600; 0 only builds and seeds). With no TARGET, all run.
# For each target it prints the executions, the time, and the crash/timeout/oom/leak artifacts that
# run produced (kept under fuzz/artifacts/TARGET/). Exits 1 if any run produced a crash or oom.
#
# Environment (all optional):
#   KILN_FUZZ_TIMEOUT  seconds one input may run before it is a timeout finding (default 10)
#   KILN_FUZZ_RSS_MB   memory limit of the fuzzing process, in MiB (default 2048)
#
# Why RUSTC_BOOTSTRAP=1: cargo-fuzz compiles with `-Zsanitizer=address` and sanitizer-coverage
# flags, which rustc accepts only on a nightly toolchain. This machine (and CI) has stable Rust
# only, and RUSTC_BOOTSTRAP=1 lets a stable rustc accept those flags. It is set only for the fuzz
# build below; the workspace itself never needs it.
#
# Layout: the instrumented build goes to target/fuzz-build (its own target dir, so it neither
# waits on nor invalidates the workspace's build); seeds are generated into target/fuzz-seeds and
# never committed; the corpus libFuzzer grows is fuzz/corpus/TARGET (git-ignored) and is reused by
# the next run; logs of each run are in target/fuzz-logs/TARGET.log.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

SECONDS_PER_TARGET=${1:-600}
shift || true
ALL_TARGETS=(yaml_load scan cel_eval cel_deep simpleschema shorthand json_pointer_filters kpatch render_rgd envsubst yaml_fast krm_envelope flux_kustomization flux_artifact_paths kustomization_paths revision_read cmp_kustomization)
if [ $# -gt 0 ]; then TARGETS=("$@"); else TARGETS=("${ALL_TARGETS[@]}"); fi
TIMEOUT=${KILN_FUZZ_TIMEOUT:-10}
RSS_MB=${KILN_FUZZ_RSS_MB:-2048}
CARGO_FUZZ_VERSION=0.13.2

case $SECONDS_PER_TARGET in
    '' | *[!0-9]*) echo "usage: $0 [SECONDS_PER_TARGET] [TARGET...]" >&2; exit 2 ;;
esac
for t in "${TARGETS[@]}"; do
    [ -f "fuzz/fuzz_targets/$t.rs" ] || { echo "unknown target: $t (have: ${ALL_TARGETS[*]})" >&2; exit 2; }
done

# --- cargo-fuzz, installed into the project, pinned ---------------------------------------------
TOOLS=$ROOT/target/tools/cargo-fuzz
CARGO_FUZZ=$TOOLS/bin/cargo-fuzz
if ! [ -x "$CARGO_FUZZ" ] || ! "$CARGO_FUZZ" --version 2>/dev/null | grep -q "$CARGO_FUZZ_VERSION"; then
    echo "== installing cargo-fuzz $CARGO_FUZZ_VERSION into $TOOLS"
    cargo install cargo-fuzz --version "$CARGO_FUZZ_VERSION" --locked --root "$TOOLS"
fi

export RUSTC_BOOTSTRAP=1
FUZZ_TARGET_DIR=$ROOT/target/fuzz-build
# `cargo fuzz` is cargo-fuzz run as a cargo subcommand: the first argument is its own name.
fuzz() { "$CARGO_FUZZ" fuzz "$@"; }

# --- build -----------------------------------------------------------------------------------------
# --debug-assertions: arithmetic overflow and debug_assert! panic as they do in `cargo test`, so
# the fuzzer finds them instead of letting release wrap-around hide a wrong result.
echo "== building ${TARGETS[*]}"
for t in "${TARGETS[@]}"; do
    fuzz build --debug-assertions --target-dir "$FUZZ_TARGET_DIR" "$t"
done
BIN_DIR=$FUZZ_TARGET_DIR/x86_64-unknown-linux-gnu/release

# --- seeds from testdata/ --------------------------------------------------------------------------
SEEDS=$ROOT/target/fuzz-seeds
rm -rf "$SEEDS"

# seed TARGET FILE: copy a file into a target's seeds, named by content so duplicates collapse.
seed() {
    local dir=$SEEDS/$1
    mkdir -p "$dir"
    cp "$2" "$dir/$(sha1sum "$2" | cut -c1-16)"
}
# seed_text TARGET TEXT
seed_text() {
    local dir=$SEEDS/$1 h
    mkdir -p "$dir"
    h=$(printf '%s' "$2" | sha1sum | cut -c1-16)
    printf '%s' "$2" >"$dir/$h"
}

# Every input file, skipping goldens' expected output. testdata/bad is included on purpose:
# malformed inputs are the most interesting starting points.
mapfile -t YAML_FILES < <(find testdata examples -type f \( -name '*.yaml' -o -name '*.yml' -o -name '*.json' \) \
    ! -name 'expected*' | LC_ALL=C sort)
# A whole golden case as one stream (several files joined by `---`), as `kiln render` reads it.
mapfile -t CASE_DIRS < <(find testdata -type f \( -name expected.yaml -o -name expected-errors.txt \) \
    -printf '%h\n' | LC_ALL=C sort -u)

for f in "${YAML_FILES[@]}"; do
    seed yaml_load "$f"
    # The fast YAML reader only ever sees YAML.
    case $f in *.json) ;; *) seed yaml_fast "$f" ;; esac
    # The kro and component corpora are large; the schema parsers only need definitions.
    if grep -q 'kind: *ResourceGraphDefinition' "$f"; then seed simpleschema "$f"; fi
    if grep -q 'openchoreo.dev/' "$f"; then seed shorthand "$f"; fi
    case $f in */patches/*) seed kpatch "$f" ;; esac
done
tmp=$(mktemp)
for d in "${CASE_DIRS[@]}"; do
    : >"$tmp"
    while IFS= read -r f; do
        { cat "$f"; printf '\n---\n'; } >>"$tmp"
    done < <(find "$d" -maxdepth 1 -type f \( -name '*.yaml' -o -name '*.yml' \) ! -name 'expected*' | LC_ALL=C sort)
    [ -s "$tmp" ] && seed render_rgd "$tmp"
done
rm -f "$tmp"
while IFS= read -r f; do seed kpatch "$f"; done < <(find testdata -type f -name '*.kpatch' | LC_ALL=C sort)

# Expressions: every `${…}` written in testdata (an approximation of the scanner, which is all a
# seed needs). The scanner gets whole template strings; CEL gets the text between the delimiters.
while IFS= read -r line; do
    seed_text scan "$line"
done < <(grep -rhoE '[^"]*\$\{[^}]*\}[^"]*' testdata --include='*.yaml' --include='*.kpatch' | sed 's/^ *//' | LC_ALL=C sort -u)
while IFS= read -r expr; do
    [ ${#expr} -le 256 ] && seed_text cel_eval "$expr"
done < <(grep -rhoE '\$\{[^}]*\}' testdata --include='*.yaml' | sed -e 's/^\${//' -e 's/}$//' | LC_ALL=C sort -u)
# cel_deep reads byte pairs (step, length): seeds are the issue-24 crash shapes and their mixes
# (a 5,000-term `+` chain, a 4,000-term string chain, member-call and selection chains, nesting).
mkdir -p "$SEEDS/cel_deep"
for hex in '00ea' '0ae5' '04d0' '0dd0' '02ff03ff' '0101010101010c50' '05050505' '00ff0e010b01' '0f030f030f03'; do
    printf '%b' "$(printf '%s' "$hex" | sed 's/../\\x&/g')" >"$SEEDS/cel_deep/$hex"
done
# CEL beyond what the goldens use: the extensions, optionals, bind, comprehensions.
for expr in \
    "[1, 2, 3].map(x, x * 2).filter(y, y > 2).exists(z, z == 4)" \
    "{'a': 1}.?b.orValue(7) + math.greatest(1, 5, 3)" \
    "cel.bind(x, 'ab', x + x).size()" \
    "'A,B'.lowerAscii().split(',').join('-')" \
    "base64.encode(b'hi') + string(int('12') + 1)" \
    "[3, 1, 2].sort()[0] == 1 ? 'x'.repeat(3) : 'y'" \
    "lists.range(5).all(i, i < 5)" \
    "dyn(1.5) + 2.0 == 3.5 && timestamp('2024-01-01T00:00:00Z') < timestamp('2025-01-01T00:00:00Z')"; do
    seed_text cel_eval "$expr"
done
# Pointer paths: the `path:` of every patch operation in the component testdata, as
# "op\npath\nvalue" inputs, plus hand-written filter forms.
while IFS= read -r p; do
    seed_text json_pointer_filters "$(printf 'add\n%s\nx: 1\n' "$p")"
    seed_text json_pointer_filters "$(printf 'remove\n%s\n' "$p")"
done < <(grep -rhoE 'path: */[^ ]*' testdata/component testdata/bad/component 2>/dev/null | sed -E 's/^path: *//' | LC_ALL=C sort -u)
for p in \
    "/spec/template/spec/containers[?(@.name=='app')]/image" \
    "/spec/template/spec/containers/[*]/env/-" \
    "/spec/template/spec/containers[?(@.name=='app')]/env[?(@.valueFrom.secretKeyRef.name=='s')]/value" \
    "/spec/template/spec/volumes[0]/name" \
    "/metadata/annotations/a~1b" \
    "/spec/template/spec/containers[-]"; do
    seed_text json_pointer_filters "$(printf 'replace\n%s\n{k: v}\n' "$p")"
    seed_text json_pointer_filters "$(printf 'mergeShallow\n%s\n{k: v}\n' "$p")"
done
# Flux substitution (envsubst target: "NAME=VALUE" lines, a NUL, then the template; without a
# NUL the target uses fixed variables). Each testdata/flux input on its own and after the
# name/value pairs of its vars.yaml (an approximation; extra pairs do no harm), every `${…}` in
# those inputs, and the operators written out.
tmp=$(mktemp)
while IFS= read -r d; do
    [ -f "$d/input.yaml" ] || continue
    seed envsubst "$d/input.yaml"
    { sed -nE 's/^ +([A-Za-z_][A-Za-z0-9_-]*): *"?([^"]*)"?$/\1=\2/p' "$d/vars.yaml" 2>/dev/null || true
      printf '\0'; cat "$d/input.yaml"; } >"$tmp"
    seed envsubst "$tmp"
done < <(find testdata/flux -mindepth 1 -maxdepth 1 -type d 2>/dev/null | LC_ALL=C sort)
while IFS= read -r expr; do
    seed_text envsubst "$expr"
done < <(grep -rhoE '\$+\{[^}]*\}?' testdata/flux --include='*.yaml' 2>/dev/null | LC_ALL=C sort -u)
for expr in '${v}' '${#v}' '${v^}' '${v^^}' '${v,}' '${v,,}' '${v:1}' '${v:1:2}' '${v:0:-1}' \
    '${v#*.}' '${v##*.}' '${v%.*}' '${v%%.*}' '${v#[a-z]?}' '${v/./-}' '${v//./-}' '${v/#v/w}' \
    '${v/%3/4}' '${v///x}' '${v-d}' '${v=d}' '${v:-${a:=b}}' '${v:=d}' '${v:?d}' '${v:+d}' \
    '$${v} $$ $v' '${AUTH[@]}' '${env:HOME}'; do
    printf 'v=v1.2.3\na=\0%s' "$expr" >"$tmp"
    seed envsubst "$tmp"
done
rm -f "$tmp"
# KRM envelopes (krm_envelope): every input file as a plain stream, and as the ResourceList kpt
# sends for a package (the layout kpt writes, which the reader splits into item texts), and the
# ResourceLists of kiln-krm's own tests kept in testdata/krm.
for f in "${YAML_FILES[@]}"; do
    case $f in *.json) ;; *) seed krm_envelope "$f" ;; esac
done
if command -v kpt >/dev/null; then
    tmp=$(mktemp)
    for d in testdata/krm/kro testdata/component/seed-web-app testdata/render; do
        [ -d "$d" ] && kpt fn source "$d" >"$tmp" 2>/dev/null && seed krm_envelope "$tmp"
    done
    rm -f "$tmp"
fi

# kustomize's kustomization files (kustomization_paths): every one of testdata, and the hostile
# hand-written ones kept as regressions.
while IFS= read -r f; do seed kustomization_paths "$f"; done < <(find testdata fuzz/regressions/kustomization_paths -type f \( -name 'kustomization.y*ml' -o -path '*/kustomization_paths/*' \) | LC_ALL=C sort)
# kiln-cmp's application kustomization (cmp_kustomization): the same files, as the application's
# kustomization and as the base's (after a NUL), and shapes that reach for the outside file.
tmp=$(mktemp)
while IFS= read -r f; do
    seed cmp_kustomization "$f"
    { printf 'resources: [cm.yaml, ../base]\n\0'; cat "$f"; } >"$tmp"
    seed cmp_kustomization "$tmp"
done < <(find testdata fuzz/regressions/kustomization_paths -type f \( -name 'kustomization.y*ml' -o -path '*/kustomization_paths/*' \) | LC_ALL=C sort)
for k in 'resources: [cm.yaml, inner]' 'resources: [cm.yaml, ../../../outside]' 'resources: [/etc]' \
    'resources: [cm.yaml, inner/../../..]' 'namePrefix: p-\nresources: [cm.yaml, ../base, inner]' \
    'resources: [cm.yaml]\nconfigMapGenerator: [{name: c, files: [../../../outside]}]' \
    'components: [../base]\npatches: [{path: ../../../outside}]'; do
    printf "$k\n" >"$tmp"
    seed cmp_kustomization "$tmp"
    { printf 'resources: [cm.yaml, ../base]\n\0'; printf "$k\n" | sed 's/cm.yaml/d.yaml/'; } >"$tmp"
    seed cmp_kustomization "$tmp"
done
rm -f "$tmp"
# kiln diff's revision reading (revision_read): object stores written out (see
# fuzz/src/targets.rs, `revision_input`): the saved hostile ones, a plain application, a tree
# shared level over level, links, packages with their local extensions.
while IFS= read -r f; do seed revision_read "$f"; done < <(find fuzz/regressions/revision_read -type f | LC_ALL=C sort)
seed_text revision_read "$(printf 'b apiVersion: v1\nt cm.yaml:f:0\nt web:t:1 README.md:f:0\n@ web\n')"
seed_text revision_read "$(printf 'b a: 1\nt parameters.yaml:f:0\nt pkg.kurel:t:1 pkg.local.kurel:t:1 other:t:1 x.yaml:f:0\nt apps:t:2\n@ apps/pkg.kurel apps/x.yaml\n')"
seed_text revision_read "$(printf 'b ../shared\nb a: 1\nt s.yaml:f:1\nt link:l:0 cm.yaml:f:1\nt app:t:3\nt apps:t:4 shared:t:2\n@ apps/app apps/app/link/s.yaml\n')"
seed_text revision_read "$(printf 'b a: 1\nt a:f:0 b:f:0 c:f:0 d:f:0\nt a:t:1 b:t:1 c:t:1 d:t:1\nt a:t:2 b:t:2 c:t:2 d:t:2\nt a:t:3 b:t:3 c:t:3 d:t:3\nt bomb:t:4 app:t:1 vendor:s:0\n@ app\n')"
# Flux Kustomizations (flux_kustomization): every file that holds one, and each with its
# spec.path changed to paths the door must refuse. Artifact paths (flux_artifact_paths): the file
# list of every testdata directory, and hand-written hard cases (long names, `..`, `//`).
while IFS= read -r f; do
    seed flux_kustomization "$f"
    seed_text flux_kustomization "$(sed -E 's#^(  path:).*#\1 ../outside#' "$f")"
done < <(grep -rlE '^apiVersion: kustomize.toolkit.fluxcd.io/' testdata 2>/dev/null | LC_ALL=C sort)
for d in testdata/flux-door/repo testdata/render testdata/krm; do
    [ -d "$d" ] && seed_text flux_artifact_paths "$(cd "$d" && find . -type f | sed 's#^\./##' | LC_ALL=C sort)"
done
seed_text flux_artifact_paths "$(printf 'a/b.yaml\nrun.sh*\n%s/x.yaml\n%s.yaml\n../x\na//b\n' "$(printf 'd%.0s' $(seq 1 120))" "$(printf 'e%.0s' $(seq 1 300))")"

for t in "${TARGETS[@]}"; do
    n=$(find "$SEEDS/$t" -type f 2>/dev/null | wc -l)
    echo "== seeds for $t: $n"
done

[ "$SECONDS_PER_TARGET" -eq 0 ] && exit 0

# --- run -------------------------------------------------------------------------------------------
LOGS=$ROOT/target/fuzz-logs
mkdir -p "$LOGS"
failed=0
summary=()
for t in "${TARGETS[@]}"; do
    artifacts=$ROOT/fuzz/artifacts/$t
    corpus=$ROOT/fuzz/corpus/$t
    mkdir -p "$artifacts" "$corpus"
    before=$(mktemp)
    find "$artifacts" -type f | LC_ALL=C sort >"$before"
    case $t in
        # Matches the target's own input cap; longer inputs would only be skipped.
        cel_eval) max_len=256 ;;
        scan | kpatch | json_pointer_filters | envsubst | revision_read | cmp_kustomization) max_len=4096 ;;
        # Large enough for a whole manifest; every input the fast path takes is parsed twice.
        yaml_fast) max_len=16384 ;;
        *) max_len=65536 ;;
    esac
    echo "== fuzzing $t for ${SECONDS_PER_TARGET}s (timeout ${TIMEOUT}s per input, rss ${RSS_MB} MiB)"
    start=$(date +%s)
    # The binaries built above run directly (what `cargo fuzz run` does after building, with the
    # same ASAN_OPTIONS), so every target of a long run fuzzes the same snapshot of the sources
    # even while the working tree changes under it.
    # -fork=1: one child process at a time does the fuzzing (one core), and the parent keeps going
    # after a crash, timeout or OOM instead of stopping at the first finding, so a run always
    # covers its full time and records every distinct artifact.
    set +e
    ASAN_OPTIONS=${ASAN_OPTIONS:-detect_odr_violation=0} "$BIN_DIR/$t" \
        -max_total_time="$SECONDS_PER_TARGET" -timeout="$TIMEOUT" -rss_limit_mb="$RSS_MB" \
        -max_len="$max_len" -fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1 \
        -artifact_prefix="$artifacts/" -print_final_stats=1 "$corpus" "$SEEDS/$t" >"$LOGS/$t.log" 2>&1
    status=$?
    set -e
    elapsed=$(($(date +%s) - start))
    # In fork mode the parent prints "#EXECS: cov: …" after each child job; the last one counts
    # every execution of the run.
    execs=$(grep -oE '^#[0-9]+' "$LOGS/$t.log" | tail -1 | tr -d '#')
    new=$(comm -13 "$before" <(find "$artifacts" -type f | LC_ALL=C sort))
    rm -f "$before"
    count() { printf '%s\n' "$new" | grep -c "/$1-" || true; }
    crashes=$(count crash)
    timeouts=$(count timeout)
    ooms=$(count oom)
    leaks=$(count leak)
    line="$t: ${execs:-0} executions in ${elapsed}s (libFuzzer exit $status); crashes $crashes, timeouts $timeouts, ooms $ooms, leaks $leaks"
    echo "== $line"
    [ -n "$new" ] && printf '   %s\n' $new
    summary+=("$line")
    if [ "$crashes" -gt 0 ] || [ "$ooms" -gt 0 ] || [ "$leaks" -gt 0 ]; then failed=1; fi
done

echo
echo "== summary (${SECONDS_PER_TARGET}s per target; logs in target/fuzz-logs)"
printf '%s\n' "${summary[@]}"
exit $failed
