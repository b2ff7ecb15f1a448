#!/usr/bin/env bash
# On the GPU machine: the backward kernels' objects that assume multiples of 8, checked and timed.
# `grid`: the GPU test grid of the implicit GEMM's backward solvers (bench/gpu_test_all.sh;
# their 16-bit channels-last cases of 8k channels take those objects) against the float64
# reference; then the sm90-132 package and, against it, bench/align8_backward_ab.py's two arms
# over the zoo's layers of 8k channels (NHWC, backward data and weights, batch 32; FP16 and BF16
# as shipped, FP16 on the generic objects) and their comparison. Output under OUTDIR; a summary line per step.
#
#   bash bench/gpu_align8_backward.sh OUTDIR   (GRID_S, GRID_TIMEOUT_S, BUILD_S, AB_S: limits;
#                                               GRID_S=0 skips the grid)
set -uo pipefail
out="${1:?usage: bash bench/gpu_align8_backward.sh OUTDIR}"
here="$(dirname "$0")"
mkdir -p "$out"
t0=$(date +%s)
stamp() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
if [ "${GRID_S:-150}" != 0 ]; then
  GRID_SOLVER=ConvTritonImplicitGemmBwd,ConvTritonImplicitGemmWrw,ConvTritonImplicitGemmViaNhwcBwd,ConvTritonImplicitGemmViaNhwcWrw \
    TESTS_S="${GRID_S:-150}" timeout "${GRID_TIMEOUT_S:-260}" bash "$here/gpu_test_all.sh" \
    "$out/grid" > "$out/grid.txt" 2>&1
  stamp "grid rc=$?"; tail -6 "$out/grid.txt"
fi
# The zoo steps keep a kernel cache and user databases of their own: the grid's objects must not
# serve them (`compiles` counts what the package lacks).
export MIOPEN_CUSTOM_CACHE_DIR=/tmp/mkcache-ab MIOPEN_USER_DB_PATH=/tmp/mkuser-ab
source "$here/_gpu_env.sh"
sm90_package /tmp/sys "$out"
export MIOPEN_SYSTEM_DB_PATH=/tmp/sys
ab_s="${AB_S:-130}"
# The generic arm in FP16 only: the objects it needs compile one after another in the run.
for arm in align8 generic; do
  types=FP16,BF16; [ "$arm" = generic ] && types=FP16
  timeout "$ab_s" python3 bench/align8_backward_ab.py run --arm "$arm" --types "$types" \
    --budget-s "$(( ab_s - 25 ))" --out "$out/ab_$arm" > "$out/ab_$arm.log" 2>&1
  stamp "arm $arm rc=$?"; grep -E "^\[" "$out/ab_$arm.log" | tail -4
done
python3 bench/align8_backward_ab.py compare "$out/ab_align8.json" "$out/ab_generic.json" \
  --out "$out/align8_backward_h200"
stamp "compare rc=$?"
