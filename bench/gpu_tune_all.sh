#!/usr/bin/env bash
# On the GPU machine, in one go: the GPU find tests, then tuning of every shipped manifest (all directions)
# plus the bench layers, time-bounded; results under OUTDIR (first argument).
set -uo pipefail
out="${1:?usage: bash bench/gpu_tune_all.sh OUTDIR}"
source "$(dirname "$0")/_gpu_env.sh"
mkdir -p "$out/tune"
timeout 120 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_find_gpu.py \
  tests/gpu/test_backend_cuda.py 2>&1 | tail -15 > "$out/gpu_find_tests.txt"
tail -3 "$out/gpu_find_tests.txt"
date -u +%FT%TZ > "$out/date.txt"
timeout 520 miopenkernels tune -m bench/resnet50_b32.txt -m resnet50 -m vgg16 -m inception_v3 \
  -m mobilenet_v2 -m unet --out "$out/tune" --time-limit "${TUNE_S:-420}" --per-solver 4 \
  --candidates 24 2>&1 | grep -v "^\[" | tail -8
