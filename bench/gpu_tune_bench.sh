#!/usr/bin/env bash
# On the GPU machine: tune every solver on the batch-32 cases bench/kernels.py measures
# (bench/resnet50_b32_all.txt: FP32, FP16, BF16; F, B, W; NCHW, NHWC), FP32 problems under both
# math modes (IEEE records and `_tf32` ones), so that find answers them from the FindDb with the
# fastest measured kernel. SHARD=I/N tunes every N-th problem from I (one call per shard fits
# a 10-minute command). CASES=TF32-B-NCHW,FP32-F-NCHW tunes those cases only, GREP='-c 3 -H 224'
# the manifest lines holding that text only (the first layer), SOLVERS (a glob)
# those solvers, CANDIDATES sets of each tunable solver's legal space, MANIFEST another driver
# command list in place of the batch-32 one (both FP32 math modes). Everything comes back as
# one archive under OUTDIR (first argument); merge its shards into dbs/sm9084 with
# `miopenkernels db merge`.
set -uo pipefail
out="${1:?usage: SHARD=0/3 bash bench/gpu_tune_bench.sh OUTDIR}"
source "$(dirname "$0")/_gpu_env.sh"
mkdir -p "$out/tune"
tune_stamp "$out/tune/device.txt" "shard ${SHARD:-0/1}"
manifest="${MANIFEST:-bench/resnet50_b32_all.txt}" math=both
if [ -n "${CASES:-}" ]; then
  manifest="$out/tune/cases.txt"
  python3 bench/_layers.py --all "--cases=$CASES" "$manifest" > /dev/null
  case "$CASES" in *TF32*) case "$CASES" in *FP32*) ;; *) math=tf32 ;; esac ;; *) math=ieee ;; esac
  echo "cases $CASES ($(grep -vc '^#' "$manifest") problems), fp32 math $math" >> "$out/tune/device.txt"
fi
if [ -n "${GREP:-}" ]; then  # only the manifest's lines that hold this text (-c 3 -H 224)
  grep -F -e "$GREP" "$manifest" > "$out/tune/lines.txt"
  manifest="$out/tune/lines.txt"
  echo "lines holding '$GREP': $(grep -c . "$manifest")" >> "$out/tune/device.txt"
fi
timeout "${TUNE_TIMEOUT_S:-560}" miopenkernels tune -m "$manifest" --solvers "${SOLVERS:-*}" \
  --fp32-math "$math" --shard "${SHARD:-0/1}" --out "$out/tune" --time-limit "${TUNE_S:-420}" \
  --per-solver "${PER_SOLVER:-2}" --candidates "${CANDIDATES:-8}" --json \
  > "$out/tune/tune.json" 2> "$out/tune/tune.err"
echo "tune rc=$? $(tail -c 400 "$out/tune/tune.json")"
grep -m1 precompiled "$out/tune/tune.err"
date -u +%FT%TZ >> "$out/tune/device.txt"
tar czf "$out/../tune_bench.tgz" -C "$out" tune && rm -rf "${out:?}"/* && mv "$out/../tune_bench.tgz" "$out/"
