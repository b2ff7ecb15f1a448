#!/usr/bin/env bash
# On the GPU machine, in two steps of under 10 minutes each: `grid`, the GPU test grid (every
# solver against the float64 reference, the grouped direct family and grouped backward data on
# the implicit GEMM included, bench/gpu_test_all.sh); `zoo`, the sm90-132 package and, against
# it, bench/zoo.py over ResNeXt-50 32x4d (4-32 channels a group) and RegNetY-400MF (8 a group).
# bench/gpu_depthwise.sh's steps with those networks. A changed kernel file changes every
# Triton object's key, so the package's build is cold the first time: BUILD_S gives it room.
# Output under OUTDIR; a summary line per step.
#
#   bash bench/gpu_grouped.sh OUTDIR grid|zoo   (GRID_S, GRID_TIMEOUT_S, BUILD_S, ZOO_S)
set -uo pipefail
case "${2:-}" in
  grid) export GRID_S="${GRID_S:-240}" GRID_TIMEOUT_S="${GRID_TIMEOUT_S:-560}" ZOO_S=0 ;;
  zoo) export GRID_S=0 BUILD_S="${BUILD_S:-360}" ZOO_S="${ZOO_S:-200}" KERNELS_S=0 ;;
  *) echo "usage: bash bench/gpu_grouped.sh OUTDIR grid|zoo" >&2; exit 2 ;;
esac
NETWORKS=resnext50_32x4d,regnet_y_400mf ZOO_NAME=grouped \
  exec bash "$(dirname "$0")/gpu_depthwise.sh" "$1"
