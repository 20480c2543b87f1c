#!/usr/bin/env bash
# The diff figure of kiln-bench alone (issue 27): `kiln diff kiln` with one instance changed in
# the working tree against `kiln render kiln`, on the web-app fleet of N instances, measured as
# work rather than wall time so that it means something on a machine shared with other builds:
#
#   - CPU time (task-clock, every thread) and wall, best of RUNS, from `perf stat`;
#   - with CALLGRIND=1, instructions (callgrind's Ir, every thread), once each; the profiles are
#     kept as target/diff-measure/callgrind.{diff,render}.N for callgrind_annotate.
#
# usage: scripts/diff-measure.sh [N] [RUNS]       (default 10000 instances, 5 runs)
#   KILN=path   the kiln binary to measure (default target/release/kiln, built first)
#
# The tree is generated once by `kiln-bench --write-fleet` under target/diff-measure/fleet-N (a
# git repository holding kiln/, committed, with the first instance's `replicas` changed in the
# working tree, as kiln-bench changes it) and kept between runs.
set -euo pipefail

n="${1:-10000}"
runs="${2:-5}"
root="$(cd "$(dirname "$0")/.." && pwd)"
out="$root/target/diff-measure"
dir="$out/fleet-$n"

if [ -z "${KILN:-}" ]; then
    (cd "$root" && cargo build --release -q -p kiln -p kiln-bench)
    KILN="$root/target/release/kiln"
fi

if [ ! -d "$dir/.git" ]; then
    rm -rf "$dir"
    mkdir -p "$dir"
    "$root/target/release/kiln-bench" --sizes "$n" --write-fleet "$dir"
    git -C "$dir" init -q
    git -C "$dir" add kiln
    GIT_AUTHOR_NAME=m GIT_AUTHOR_EMAIL=m@localhost GIT_COMMITTER_NAME=m \
        GIT_COMMITTER_EMAIL=m@localhost git -C "$dir" commit -q -m fleet
    # kiln-bench's change: the first file (sorted) with a numeric `replicas:`, that number n%9+1.
    first="$(cd "$dir" && grep -l '^  replicas: [0-9]' kiln/apps/*.yaml | sort | sed -n 1p)"
    perl -0pi -e 's/^  replicas: (\d+)$/"  replicas: " . ($1 % 9 + 1)/me' "$dir/$first"
fi

# best of RUNS: task-clock (ms) and wall (s) of one command, stdout discarded.
measure() {
    local best_cpu="" best_wall=""
    for _ in $(seq "$runs"); do
        local line cpu wall
        line="$(cd "$dir" && perf stat -x, -e task-clock "$KILN" "$@" 2>&1 >/dev/null |
            grep task-clock)"
        cpu="${line%%,*}"
        wall="$(cd "$dir" && { /usr/bin/time -f %e "$KILN" "$@" >/dev/null; } 2>&1 | tail -1)"
        if [ -z "$best_cpu" ] || awk "BEGIN{exit !($cpu < $best_cpu)}"; then best_cpu="$cpu"; fi
        if [ -z "$best_wall" ] || awk "BEGIN{exit !($wall < $best_wall)}"; then best_wall="$wall"; fi
    done
    echo "$best_cpu $best_wall"
}

instructions() {
    local name="$1"
    shift
    (cd "$dir" && valgrind --tool=callgrind --callgrind-out-file="$out/callgrind.$name.$n" \
        "$KILN" "$@" >/dev/null 2>"$out/callgrind.$name.$n.log")
    grep -o 'Collected : [0-9]*' "$out/callgrind.$name.$n.log" | awk '{print $3}'
}

summary="$(cd "$dir" && "$KILN" diff kiln | tail -1)"
read -r dcpu dwall <<<"$(measure diff kiln)"
read -r rcpu rwall <<<"$(measure render kiln)"
echo "N=$n, $summary (best of $runs; load: $(cut -d' ' -f1-3 /proc/loadavg))"
awk -v dc="$dcpu" -v rc="$rcpu" -v dw="$dwall" -v rw="$rwall" 'BEGIN{
    printf "  CPU time   diff %7.0f ms   render %7.0f ms   diff/render %.2fx\n", dc, rc, dc/rc;
    printf "  wall       diff %7.2f s    render %7.2f s    diff/render %.2fx\n", dw, rw, dw/rw }'
if [ "${CALLGRIND:-0}" = 1 ]; then
    di="$(instructions diff diff kiln)"
    ri="$(instructions render render kiln)"
    awk -v d="$di" -v r="$ri" 'BEGIN{
        printf "  instr      diff %7.3f G    render %7.3f G    diff/render %.2fx\n", d/1e9, r/1e9, d/r }'
fi
