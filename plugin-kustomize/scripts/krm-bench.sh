#!/usr/bin/env bash
# Interim measurement of kiln-krm's share of a kustomize or kpt run (issue 14's speed goals),
# until the KRM rows are part of kiln-bench: plugin-kustomize/scripts/krm-bench.sh [KILN_KRM] [RUNS]
#
# - kpt: `kpt fn eval --exec kiln-krm` on a small package (testdata/krm/kro) against the same
#   `kpt fn eval` with a no-op exec function (`cat`): the difference is kiln's share.
# - kustomize: `kubectl kustomize --enable-alpha-plugins` with kiln as the legacy exec generator,
#   against plain `kubectl kustomize` of the already-rendered objects (the same package without
#   kiln).
# - pass-through: a 5,000-item ResourceList (kpt's layout, ~1 KiB items) through kiln-krm alone,
#   in MB/s of input.
# Medians of RUNS (default 20) wall times, in milliseconds.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
BIN=$(realpath "${1:-target/release/kiln-krm}")
RUNS=${2:-20}
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
# time_ms CMD...: wall time of one run in ms.
time_ms() { local s e; s=$(date +%s%N); "$@" >/dev/null 2>&1; e=$(date +%s%N); echo $(((e - s) / 1000000)); }
series() { for _ in $(seq "$RUNS"); do time_ms "$@"; done | median; }

# --- kpt ---
cp -r testdata/krm/kro "$W/pkg"
cp -r "$W/pkg" "$W/pkg0"
kpt_eval() { rm -rf "$W/p" && cp -r "$W/$1" "$W/p" && kpt fn eval "$W/p" --exec "$2"; }
copy_only() { rm -rf "$W/p" && cp -r "$W/$1" "$W/p"; }
c=$(series copy_only pkg)
k=$(series kpt_eval pkg "$BIN")
n=$(series kpt_eval pkg0 cat)
echo "kpt fn eval, small package: with kiln-krm $((k - c)) ms, with a no-op function $((n - c)) ms: kiln adds $((k - n)) ms"

# --- kustomize (legacy exec plugin) ---
XDG="$W/xdg"
"$BIN" install-exec-plugin --dir "$XDG/kustomize/plugin" >/dev/null
mkdir -p "$W/gen" "$W/plain"
cp testdata/krm/kro/rgd.yaml testdata/krm/kro/apps/shop.yaml "$W/gen/"
printf 'apiVersion: fn.kiln.dev/v1alpha1\nkind: Render\nmetadata: {name: r}\nspec: {paths: [rgd.yaml, shop.yaml]}\n' >"$W/gen/render.yaml"
printf 'generators: [render.yaml]\nnamePrefix: p-\n' >"$W/gen/kustomization.yaml"
(cd "$W/gen" && "$BIN" render.yaml </dev/null) >"$W/plain/objects.yaml"
printf 'resources: [objects.yaml]\nnamePrefix: p-\n' >"$W/plain/kustomization.yaml"
kz() { XDG_CONFIG_HOME="$XDG" kubectl kustomize --enable-alpha-plugins "$1"; }
g=$(series kz "$W/gen")
p=$(series kz "$W/plain")
echo "kubectl kustomize, small package: with kiln-krm (legacy generator) $g ms, plain kustomize of the same objects $p ms: kiln adds $((g - p)) ms"

# --- 5,000-item pass-through ---
python3 - "$W/big.yaml" <<'PY'
import sys
with open(sys.argv[1], "w") as f:
    f.write("apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n")
    for i in range(5000):
        f.write(f"""- apiVersion: v1
  kind: ConfigMap
  metadata:
    name: cm-{i}
    namespace: ns-{i % 7}
    labels:
      app.kubernetes.io/name: app-{i}
      app.kubernetes.io/part-of: fleet
    annotations:
      config.kubernetes.io/index: '0'
      config.kubernetes.io/path: 'apps/cm-{i}.yaml'
      internal.config.kubernetes.io/index: '0'
      internal.config.kubernetes.io/path: 'apps/cm-{i}.yaml'
      internal.config.kubernetes.io/seqindent: 'compact'
      internal.config.kubernetes.io/id: '{i + 1}'
      config.k8s.io/id: '{i + 1}'
  data:
    key1: "value number one for item {i}"
    key2: 'another value, quoted differently'
    list: "a,b,c,d,e,f,g,h"
    url: https://example.com/path/{i}?q=1
    number: "{i * 37}"
    text: plain text that goes on for a while to make the item about a kilobyte long in total
    more: still more plain text so that five thousand items make roughly five megabytes here
""")
PY
bytes=$(stat -c %s "$W/big.yaml")
pt() { "$BIN" <"$W/big.yaml"; }
t=$(series pt)
"$BIN" <"$W/big.yaml" | cmp -s - "$W/big.yaml" && same=identical || same=DIFFERENT
echo "pass-through of 5,000 items ($((bytes / 1024)) KiB): $t ms, $(awk -v b="$bytes" -v t="$t" 'BEGIN {printf "%.0f", b / 1e6 / (t / 1000)}') MB/s; output $same to the input"
