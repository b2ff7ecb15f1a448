#!/usr/bin/env bash
# On the GPU machine: the padded implicit GEMM solvers checked and timed. The GPU test grid of
# ConvTritonImplicitGemmPadded{Fwd,Bwd,Wrw} (bench/gpu_test_all.sh) against the float64
# reference; then the sm90-132 package and, against it, bench/padded_ab.py's two arms over the
# zoo's 2-D layers of channel counts that are not multiples of 8 (NHWC, every direction, batch
# 32; TYPES, default FP16) and their comparison. Output under OUTDIR; a summary line per step.
#
#   bash bench/gpu_padded.sh OUTDIR   (GRID_S, GRID_TIMEOUT_S, BUILD_S, AB_S: limits;
#                                      GRID_S=0 skips the grid; TYPES, REPEATS, MAX_GB)
set -uo pipefail
out="${1:?usage: bash bench/gpu_padded.sh OUTDIR}"
here="$(dirname "$0")"
mkdir -p "$out"
t0=$(date +%s)
stamp() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
if [ "${GRID_S:-120}" != 0 ]; then
  GRID_SOLVER=ConvTritonImplicitGemmPadded TESTS_S="${GRID_S:-120}" \
    timeout "${GRID_TIMEOUT_S:-200}" bash "$here/gpu_test_all.sh" "$out/grid" > "$out/grid.txt" 2>&1
  stamp "grid rc=$?"; tail -4 "$out/grid.txt"
fi
# The zoo steps keep a kernel cache and user databases of their own: the grid's objects must not
# serve them (`compiles` counts what the package lacks).
export MIOPEN_CUSTOM_CACHE_DIR=/tmp/mkcache-ab MIOPEN_USER_DB_PATH=/tmp/mkuser-ab
source "$here/_gpu_env.sh"
device_stamp "$out/device.txt" > /dev/null
sm90_package /tmp/sys "$out"
export MIOPEN_SYSTEM_DB_PATH=/tmp/sys
ab_s="${AB_S:-150}"
for arm in padded unpadded; do
  timeout "$ab_s" python3 bench/padded_ab.py run --arm "$arm" --repeats "${REPEATS:-10}" --max-gb "${MAX_GB:-3}" --types "${TYPES:-FP16}" \
    --budget-s "$(( ab_s - 30 ))" --out "$out/$arm" > "$out/$arm.log" 2>&1
  stamp "arm $arm rc=$?"; grep -E "^\[" "$out/$arm.log" | tail -3
done
python3 bench/padded_ab.py compare "$out/padded.json" "$out/unpadded.json" \
  --out "$out/padded_h200"
stamp "compare rc=$?"
