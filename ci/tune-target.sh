#!/usr/bin/env bash
# Tune one target on this machine's GPU, as each tune job of kernels.yml does (on a self-hosted
# runner labelled with the arch): PerfDb/FindDb shards in OUT, for ci/publish.sh to merge.
#
#   bash ci/tune-target.sh TARGET OUT         e.g. bash ci/tune-target.sh gfx90a-110 shards
#
# Environment: MANIFEST  a manifest in dbs/manifests or a file (empty: the tuner's default)
#              SOLVERS   solver glob (empty: all)
# Fails when the GPU here is not TARGET: shards of another GPU would poison its package.
set -euo pipefail
source "$(dirname "$0")/_lib.sh"
case "${1:-}" in -h|--help) usage; exit 0 ;; esac
[ $# -eq 2 ] || { usage >&2; exit 2; }
target="$1"
out="$2"
need_cli
mkdir -p "$out"
out="$(cd "$out" && pwd)"
cd "$ROOT"

name="$(target_name "$target")"
group "detect"
detected="$("$MK" detect --json)"
printf '%s\n' "$detected"
endgroup
printf '%s' "$detected" | "$ROOT/.venv/bin/python" -c '
import json, sys
want = sys.argv[1]
data = json.load(sys.stdin)
gpus = data if isinstance(data, list) else data.get("gpus", data.get("devices", [data]))
names = {f"{g.get(\"arch\")}-{g.get(\"cu\")}" for g in gpus if isinstance(g, dict)}
if want not in names:
    sys.exit(f"error: this machine has {sorted(names) or \"no GPU\"}, not {want}")
' "$name"

group "tune $name"
args=(tune --out "$out")
if [ -n "${MANIFEST:-}" ]; then args+=(--manifest "$MANIFEST"); fi
if [ -n "${SOLVERS:-}" ]; then args+=(--solvers "$SOLVERS"); fi
"$MK" "${args[@]}"
endgroup
echo "$name" >"$out/target"
ls -l "$out"
