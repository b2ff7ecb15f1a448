#!/usr/bin/env bash
# On the GPU machine, one call of under 600 s: the kn2row solvers (solvers/triton_kn2row.py:
# a layer of 1-8 output channels as one 1x1 GEMM over every filter tap, then a sum of shifted
# taps) against what runs those layers now. No package: every object is compiled outside the
# timings. Steps (STEPS, default grid,bwd,fwd):
#   grid     the GPU grid's cases of the kn2row solvers (three GEMM maths, forward and
#            backward data, both layouts, strided and dilated) against float64, Triton
#            hidden (KN2ROW_GRID: the solvers' name prefixes, default all six);  GRID_S
#   bwd      bench/solver_alternatives.py on FP32 backward data of the zoo's and the held-out
#            networks' 2-D layers of 1-8 input channels (at least two taps): kn2row on the
#            three-product implicit GEMM, the IEEE one and the GEMM library, beside the
#            flipped few-filter forward, the few-channel kernels and the three-product implicit
#            GEMM (BWD_SOLVERS: another list), both layouts, against IEEE cuDNN, batches
#            BATCHES (default 32);  BWD_S
#   fwd      the same on forward layers of 1-8 filters: kn2row beside the few-filter direct
#            kernel, the three-product implicit GEMM and its padded solver;  FWD_S
# Output under OUTDIR; a summary line per step.
#
#   bash bench/gpu_kn2row.sh OUTDIR
#   STEPS=bwd BATCHES=8,1 bash bench/gpu_kn2row.sh OUTDIR
set -uo pipefail
out="${1:?usage: [STEPS=...] bash bench/gpu_kn2row.sh OUTDIR}"
here="$(cd "$(dirname "$0")" && pwd)"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
t0=$(date +%s)
stamp() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
steps="${STEPS:-grid,bwd,fwd}"
want() { [[ ",$steps," == *",$1,"* ]]; }
# 2-D keys whose output side has 1-8 channels and whose filter more than one tap (FindDb keys
# name the output side fifth in both directions).
few_out='^[0-9]+-[0-9]+-[0-9]+-([2-9]|[1-9][0-9]+)x[0-9]+-[1-8]-|^[0-9]+-[0-9]+-[0-9]+-1x([2-9]|[1-9][0-9]+)-[1-8]-'

if want grid; then
  GRID_SOLVER="${KN2ROW_GRID:-ConvTritonImplicitGemmKn2Row,ConvTritonImplicitGemmTf32Kn2Row,ConvTritonImplicitGemmTf32x3Kn2Row}" \
    TESTS_S="${GRID_S:-200}" timeout 420 bash "$here/gpu_test_all.sh" "$out/grid" \
    > "$out/grid.txt" 2>&1
  stamp "grid rc=$?"; tail -4 "$out/grid/gpu_tests.txt"
fi
source "$here/_gpu_env.sh"
device_stamp "$out/device.txt" > /dev/null
alternatives() {  # alternatives NAME DIRECTION SOLVERS LIMIT
  timeout "$4" python3 bench/solver_alternatives.py --solvers "$3" --types FP32 \
    --directions "$2" --layouts NCHW,NHWC --batches "${BATCHES:-32}" --held-out \
    --only "$few_out" --budget-s "$(( $4 - 15 ))" --out "$out/$1" \
    > "$out/$1.log" 2>&1
  stamp "$1 rc=$?"; tail -24 "$out/$1.log"
}
if want bwd; then
  alternatives bwd B "${BWD_SOLVERS:-ConvTritonImplicitGemmTf32x3Kn2RowBwd,ConvTritonImplicitGemmKn2RowBwd,ConvBlasKn2RowBwd,ConvTritonFmaFewKBwd,ConvTritonSmallCBwd,ConvTritonImplicitGemmTf32x3Bwd}" "${BWD_S:-200}"
fi
if want fwd; then
  alternatives fwd F "ConvTritonImplicitGemmTf32x3Kn2RowFwd,ConvTritonImplicitGemmKn2RowFwd,ConvBlasKn2RowFwd,ConvTritonFmaFewKFwd,ConvTritonImplicitGemmTf32x3Fwd,ConvTritonImplicitGemmPaddedFwd" "${FWD_S:-200}"
fi
