#!/usr/bin/env bash
# On the GPU machine: tune the tensor-core (ConvTriton*) solvers on every problem of every shipped
# manifest and the ResNet-50 batch-32 bench layers, all directions, so that the measured
# databases (dbs/<basename>/, merged with `miopenkernels db merge`) and the miss ranking's fit
# know them. Their searches start from the configurations measured fastest per case
# (kernels/conv_triton_tuned_*.json), then a few more of the legal space. Everything comes back
# as one archive under OUTDIR (first argument).
set -uo pipefail
out="${1:?usage: bash bench/gpu_tune_triton.sh OUTDIR}"
source "$(dirname "$0")/_gpu_env.sh"
mkdir -p "$out/tune"
tune_stamp "$out/tune/device.txt"
timeout "${TUNE_TIMEOUT_S:-500}" miopenkernels tune --solvers 'ConvTriton*' \
  -m bench/resnet50_b32.txt -m resnet50 -m vgg16 -m inception_v3 -m mobilenet_v2 -m unet \
  --out "$out/tune" --time-limit "${TUNE_S:-420}" --per-solver 3 --candidates 2 --json \
  > "$out/tune/tune.json" 2> "$out/tune/tune.err"
echo "tune rc=$? $(tail -c 600 "$out/tune/tune.json")"
date -u +%FT%TZ >> "$out/tune/device.txt"
tar czf "$out/../tune_triton.tgz" -C "$out" tune && rm -rf "${out:?}"/* && mv "$out/../tune_triton.tgz" "$out/"
