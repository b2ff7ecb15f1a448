#!/usr/bin/env bash
# Continue tuning every manifest, skipping problems recorded in the FindDb shards passed as
# arguments (carried from earlier runs); results under OUTDIR (first argument).
set -uo pipefail
out="${1:?usage: bash bench/gpu_tune_resume.sh OUTDIR}"
source "$(dirname "$0")/_gpu_env.sh"
mkdir -p "$out/tune"
date -u +%FT%TZ > "$out/date.txt"
args=(); for f in "$@"; do args+=(--resume "$f"); done
timeout 560 miopenkernels tune -m bench/resnet50_b32.txt -m resnet50 -m vgg16 -m inception_v3 \
  -m mobilenet_v2 -m unet "${args[@]}" --out "$out/tune" --time-limit "${TUNE_S:-480}" \
  --per-solver 4 --candidates 24 2>&1 | grep -v "^\[" | tail -8
