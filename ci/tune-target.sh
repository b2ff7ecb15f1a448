#!/usr/bin/env bash
# Tune one target on this machine's GPU, as each tune job of kernels.yml does (on a self-hosted
# runner labelled with the arch): PerfDb/FindDb shards in OUT, for ci/publish.sh to merge.
#
#   bash ci/tune-target.sh TARGET OUT         e.g. bash ci/tune-target.sh gfx90a-110 shards
#
# Environment: MANIFEST  a manifest in dbs/manifests or a file (empty: the tuner's default)
#              SOLVERS   solver glob (empty: all)
#              TIME_LIMIT  seconds for the whole run (empty: the tuner's default)
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
if [ "${name#gfx}" != "$name" ] && ! "$ROOT/.venv/bin/python" -c 'from hip import hip' 2>/dev/null
then
    # ci/setup.sh installs the CUDA extra only; the HIP backend needs hip-python.
    group "install hip-python"
    "$ROOT/.venv/bin/python" -m pip install -q -e "${ROOT}[hip]"
    endgroup
fi
group "detect"
"$MK" detect
endgroup

group "tune $name"
# --targets makes tune refuse a GPU that is not this target.
args=(tune --targets "$name" --out "$out" --json)
if [ -n "${MANIFEST:-}" ]; then args+=(--manifest "$MANIFEST"); fi
if [ -n "${SOLVERS:-}" ]; then args+=(--solvers "$SOLVERS"); fi
if [ -n "${TIME_LIMIT:-}" ]; then args+=(--time-limit "$TIME_LIMIT"); fi
"$MK" "${args[@]}" >"$out/tune-summary.json"
endgroup
echo "$name" >"$out/target"
find "$out" -type f | sort
compgen -G "$out/*.txt" >/dev/null || compgen -G "$out/*.db" >/dev/null \
    || die "tune wrote no database shards in $out"
