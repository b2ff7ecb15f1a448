#!/usr/bin/env bash
# Rehearse kernels.yml on this machine: plan, build two targets, tune (recorded shards stand in
# for the GPU unless --tune), publish, and a dry-run release, through the same ci/ scripts and
# the same artefact layout (OUT/artifacts/pkg-<basename>, shards-<basename>) as the workflow.
# The first target gets shards, so its packages are rebuilt with merged databases; the others
# are published as built.
#
#   bash ci/rehearse.sh [--targets GLOB] [--manifest M] [--tune] [OUT]
#
#   --targets   targets to build (default: sm90-132,gfx906-60: one NVRTC, one hipcc target; the
#               recorded shards are the H100 measurements of sm90-132)
#   --manifest  problem manifest (default: tests/fixtures/manifests/rehearsal.txt, 2 problems)
#   --tune      tune the first target on this machine's GPU instead of using recorded shards
#   OUT         output folder (default: out/rehearsal); OUT/published is what would be released
set -euo pipefail
source "$(dirname "$0")/_lib.sh"

targets="sm90-132,gfx906-60"
manifest="$ROOT/tests/fixtures/manifests/rehearsal.txt"
tune=0
out=""
while [ $# -gt 0 ]; do
    case "$1" in
        -h|--help) usage; exit 0 ;;
        --targets) targets="${2:?--targets needs a value}"; shift 2 ;;
        --manifest) manifest="${2:?--manifest needs a value}"; shift 2 ;;
        --tune) tune=1; shift ;;
        -*) usage >&2; exit 2 ;;
        *) [ -z "$out" ] || { usage >&2; exit 2; }; out="$1"; shift ;;
    esac
done
out="${out:-$ROOT/out/rehearsal}"
need_cli
rm -rf "$out"
mkdir -p "$out/artifacts"
out="$(cd "$out" && pwd)"
export MANIFEST="$manifest"
start=$SECONDS

group "plan"
bash "$ROOT/ci/plan.sh" "$targets" >"$out/matrix.json"
mapfile -t rows < <(target_rows "$targets")
endgroup
echo "matrix: ${rows[*]}"

first=1
for row in "${rows[@]}"; do
    read -r name base <<<"$row"
    bash "$ROOT/ci/build-target.sh" "$name" "$out/artifacts/pkg-$base"
    if [ "$first" = 1 ]; then
        shards="$out/artifacts/shards-$base"
        if [ "$tune" = 1 ]; then
            bash "$ROOT/ci/tune-target.sh" "$name" "$shards"
        else
            group "tune $name (recorded shards)"
            mkdir -p "$shards"
            cp "$ROOT/tests/fixtures/shards/rehearsal.HIP.fdb.txt" "$shards/$base.HIP.fdb.txt"
            cp "$ROOT/tests/fixtures/shards/rehearsal.db.txt" "$shards/$base.db.txt"
            echo "$name" >"$shards/target"
            endgroup
        fi
    fi
    first=0
done

bash "$ROOT/ci/publish.sh" "$out/artifacts" "$out/published"
bash "$ROOT/ci/release.sh" --dry-run rehearsal "$out/published"
echo "rehearsal done in $((SECONDS - start)) s: $out/published"
