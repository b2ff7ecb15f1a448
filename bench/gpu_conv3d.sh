#!/usr/bin/env bash
# On the GPU machine: the 3-D family (ConvTriton3d*) against the float64 reference (the GPU
# grid's 3-D cases: every direction, type, layout and FP32 math mode), then the sm90-132
# package and, against it, bench/zoo.py over the zoo's 3-D networks (R(2+1)D-18 and 3-D U-Net)
# against cuDNN. Output under OUTDIR; a summary line per step.
#
#   bash bench/gpu_conv3d.sh OUTDIR     (GRID_S, ZOO_S: each step's time limit)
set -uo pipefail
out="${1:?usage: bash bench/gpu_conv3d.sh OUTDIR}"
here="$(dirname "$0")"
mkdir -p "$out"
t0=$(date +%s)
stamp() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
GRID_SOLVER=ConvTriton3d TESTS_S="${GRID_S:-240}" timeout 420 bash "$here/gpu_test_all.sh" \
  "$out/grid" > "$out/grid.txt" 2>&1
stamp "grid rc=$?"; tail -8 "$out/grid.txt"
source "$here/_gpu_env.sh"
sys=/tmp/sys
sm90_package "$sys" "$out"
export MIOPEN_SYSTEM_DB_PATH="$sys"
timeout "${ZOO_S:-240}" python3 bench/zoo.py --networks r2plus1d_18,unet3d --types FP16,FP32 \
  --batches 8 --budget-s "$(( ${ZOO_S:-240} - 30 ))" --out "$out/zoo_3d" > "$out/zoo.log" 2>&1
stamp "zoo rc=$?"; tail -25 "$out/zoo.log"
