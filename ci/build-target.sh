#!/usr/bin/env bash
# Build one target's kernels and package them, as each build job of kernels.yml does:
#   OUT/target          the target's name (gfx90a-110), for ci/publish.sh
#   OUT/build/          <basename>.kdb (what `miopenkernels package --from-build` reads)
#   OUT/build-summary.json  what the build compiled, from the cache or not, and any failures
#   OUT/dist/           the target's wheel (*.whl) and conda package (channel/noarch/)
#
#   bash ci/build-target.sh TARGET OUT        e.g. bash ci/build-target.sh gfx90a-110 out
#
# Environment: MANIFEST  a manifest in dbs/manifests or a file (empty: the build's default)
#              JOBS      parallel compile jobs (default: the CPU count)
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

# One matrix entry: a glob here would put several targets under one artefact name.
name="$(target_name "$target")"
echo "$name" >"$out/target"

group "build $name"
args=(build --targets "$name" --out "$out/build" -j "${JOBS:-$(nproc)}" --json)
if [ -n "${MANIFEST:-}" ]; then args+=(--manifest "$MANIFEST"); fi
"$MK" "${args[@]}" >"$out/build-summary.json"
endgroup

group "package $name"
args=(package --from-build "$out/build" --targets "$name" --out "$out/dist")
if [ -n "${MANIFEST:-}" ]; then args+=(--manifest "$MANIFEST"); fi
"$MK" "${args[@]}"
# The staged tree and the one-wheel index are intermediates that would double the artefact;
# ci/publish.sh needs build/, dist/*.whl and dist/channel.
rm -rf "$out/dist/stage" "$out/dist/simple"
endgroup

find "$out/build" "$out/dist" -type f | sort
compgen -G "$out/dist/*.whl" >/dev/null || die "no wheel in $out/dist"
compgen -G "$out/dist/channel/noarch/*.conda" >/dev/null \
    || die "no conda package in $out/dist/channel/noarch"
