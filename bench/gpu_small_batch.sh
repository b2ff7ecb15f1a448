#!/usr/bin/env bash
# On the GPU machine: the CUDA backend's tests (its timer among them), the sm90-132 package
# (bench/_gpu_env.sh's sm90_package, into /tmp/sys-after), then bench/candidate_timings.py over
# the other networks' forward layers at batch 1-16 in NCHW and NHWC: FP32 (IEEE) and FP16, then
# FP32 under TF32. The timings are what the ranking's fit reads (tune_sm9084/small_batch*).
#
#   bash bench/gpu_small_batch.sh OUTDIR      (SMALL_S, TF32_S: the two runs' budgets in s)
set -uo pipefail
out="${1:?usage: bash bench/gpu_small_batch.sh OUTDIR}"
source "$(dirname "$0")/_gpu_env.sh"
mkdir -p "$out"
device_stamp "$out/device.txt"
t0=$(date +%s)
stamp() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
timeout 120 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_backend_cuda.py \
  > "$out/backend_tests.txt" 2>&1
stamp "CUDA backend tests rc=$?"; tail -3 "$out/backend_tests.txt"
sys=/tmp/sys-after
sm90_package "$sys" "$out/build"
timeout $(( ${SMALL_S:-220} + 40 )) python3 bench/candidate_timings.py --system-db "$sys" \
  --out "$out/small_batch" --layouts NCHW,NHWC --budget-s "${SMALL_S:-220}" \
  > "$out/small_batch.txt" 2>&1
stamp "candidate timings FP32/FP16 rc=$?"; tail -3 "$out/small_batch.txt"
timeout $(( ${TF32_S:-100} + 40 )) python3 bench/candidate_timings.py --system-db "$sys" \
  --out "$out/small_batch_tf32" --types FP32 --math TF32 --layouts NCHW,NHWC \
  --budget-s "${TF32_S:-100}" > "$out/small_batch_tf32.txt" 2>&1
stamp "candidate timings TF32 rc=$?"; tail -3 "$out/small_batch_tf32.txt"
tar czf /tmp/small_batch.tgz -C "$out" . && rm -rf "${out:?}"/* && mv /tmp/small_batch.tgz "$out/"
