#!/usr/bin/env bash
# On the GPU machine: the GPU test grid (bench/gpu_test_all.sh: every solver, the depthwise family
# included, against the float64 reference), then the sm90-132 package and, against it,
# bench/zoo.py over MobileNet-v2 (depthwise, inverted residuals) and bench/kernels.py over
# ResNet-50 at batch 32. Output under OUTDIR; a summary line per step. NETWORKS (comma-separated,
# written to OUTDIR/zoo_ZOO_NAME) picks other networks for the zoo step; GRID_S=0 skips the grid,
# ZOO_S=0 the package and what follows, KERNELS_S=0 the kernels step (bench/gpu_grouped.sh).
#
#   bash bench/gpu_depthwise.sh OUTDIR     (GRID_S, ZOO_S, KERNELS_S: each step's time limit;
#                                           GRID_TIMEOUT_S: the grid's with its compiles)
set -uo pipefail
out="${1:?usage: bash bench/gpu_depthwise.sh OUTDIR}"
here="$(dirname "$0")"
mkdir -p "$out"
t0=$(date +%s)
stamp() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
if [ "${GRID_S:-120}" != 0 ]; then
  TESTS_S="${GRID_S:-120}" timeout "${GRID_TIMEOUT_S:-240}" bash "$here/gpu_test_all.sh" \
    "$out/grid" > "$out/grid.txt" 2>&1
  stamp "grid rc=$?"; tail -8 "$out/grid.txt"
fi
[ "${ZOO_S:-150}" = 0 ] && exit 0
source "$here/_gpu_env.sh"
sys=/tmp/sys
sm90_package "$sys" "$out"
export MIOPEN_SYSTEM_DB_PATH="$sys"
timeout "${ZOO_S:-150}" python3 bench/zoo.py --networks "${NETWORKS:-mobilenet_v2}" \
  --types FP16,FP32 --batches 32 --budget-s "$(( ${ZOO_S:-150} - 30 ))" \
  --out "$out/zoo_${ZOO_NAME:-mobilenet_v2}" > "$out/zoo.log" 2>&1
stamp "zoo rc=$?"; tail -25 "$out/zoo.log"
[ "${KERNELS_S:-150}" = 0 ] && exit 0
timeout "${KERNELS_S:-150}" python3 bench/kernels.py --batches 32 --types FP16,FP32 \
  --budget-s "$(( ${KERNELS_S:-150} - 20 ))" --out "$out/kernels" > "$out/kernels.log" 2>&1
stamp "kernels rc=$?"; tail -16 "$out/kernels.log"
