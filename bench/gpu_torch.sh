#!/usr/bin/env bash
# On the GPU machine: the sm90-132 package of the default manifests (bench/_gpu_env.sh's
# sm90_package) as the system databases, then bench/host_cost.py, the torch and stream/graph GPU
# tests and bench/torch_models.py against it. Output under OUTDIR; a summary line per step.
#
#   bash bench/gpu_torch.sh OUTDIR        (BENCH_S, TESTS_S, MODELS_S: each step's time limit)
set -uo pipefail
out="${1:?usage: bash bench/gpu_torch.sh OUTDIR}"
source "$(dirname "$0")/_gpu_env.sh"
sys=/tmp/sys
t0=$(date +%s)
stamp() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
sm90_package "$sys" "$out"
export MIOPEN_SYSTEM_DB_PATH="$sys"
timeout "${BENCH_S:-120}" python3 bench/host_cost.py --out "$out/host_cost.json" \
  > "$out/host_cost.txt" 2>&1
stamp "host cost rc=$?"; tail -6 "$out/host_cost.txt"
timeout "${TESTS_S:-200}" python3 -m pytest -q -p no:cacheprovider tests/gpu/test_torch_gpu.py \
  tests/gpu/test_streams_graphs.py > "$out/torch_tests.txt" 2>&1
stamp "torch and stream/graph GPU tests rc=$?"; tail -4 "$out/torch_tests.txt"
timeout "${MODELS_S:-240}" python3 bench/torch_models.py --out "$out/torch_op.json" \
  --repeats "${REPEATS:-20}" --timeout "${CASE_S:-60}" > "$out/torch_models.txt" 2>&1
stamp "torch models rc=$?"; tail -22 "$out/torch_models.txt"
