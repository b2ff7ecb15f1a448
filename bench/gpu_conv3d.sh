#!/usr/bin/env bash
# On the GPU machine: the 3-D family (ConvTriton3d*). Steps (STEPS, default grid,zoo):
#   grid     the GPU grid's 3-D cases against the float64 reference (every direction, type,
#            layout and FP32 math mode);  GRID_S
#   zoo      the sm90-132 package, then bench/zoo.py over the zoo's 3-D networks (R(2+1)D-18
#            and 3-D U-Net) at batch 8 against cuDNN;  ZOO_S
#   split_f, split_b  bench/solver_alternatives.py on forward / backward data of every 3-D
#            layer of the zoo and the held-out networks whose defaults split on a small grid
#            (`conv_triton_3d_split_spec.small_split`), batch 1 and 8, FP32 (IEEE against IEEE
#            cuDNN) and FP16, both layouts: each 3-D solver at its defaults, unsplit
#            (@split=1), at twice and half the split (objects compiled outside the timings,
#            no package);  SPLIT_S
#   ab       the same tool at batch 32 (no split) on every third 3-D layer, forward and
#            backward data, both layouts, types AB_TYPES (default FP32,FP16), solvers
#            AB_SOLVERS (default every 3-D solver of the two directions): this tree and a copy
#            of it with files replaced, the state before a change: AB_KERNEL (the copy's
#            kernels/conv_triton_3d.py) and AB_FILES ("PATH=FILE ...", each the copy's PATH)
#            (ab_before.json, ab_after.json);  AB_S
# Output under OUTDIR; a summary line per step.
#
#   bash bench/gpu_conv3d.sh OUTDIR
#   STEPS=split_f,split_b bash bench/gpu_conv3d.sh OUTDIR
#   AB_KERNEL=old/conv_triton_3d.py STEPS=ab bash bench/gpu_conv3d.sh OUTDIR
#   AB_FILES="kernels/conv_triton_3d_spec.py=old/spec.py" AB_TYPES=FP32 STEPS=ab bash ...
set -uo pipefail
out="${1:?usage: [STEPS=...] bash bench/gpu_conv3d.sh OUTDIR}"
here="$(cd "$(dirname "$0")" && pwd)"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
t0=$(date +%s)
stamp() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
steps="${STEPS:-grid,zoo}"
want() { [[ ",$steps," == *",$1,"* ]]; }
# 3-D keys (three filter axes).
keys_3d='^[0-9]+-[0-9]+-[0-9]+-[0-9]+-[0-9]+x[0-9]+x[0-9]+-'
split_solvers() {  # split_solvers SUFFIX: each 3-D solver of a direction and its split variants
  local s list=""
  for s in ConvTriton3dTf32x3 ConvTriton3d ConvTriton3dViaNdhwcTf32x3 ConvTriton3dViaNdhwc \
           ConvTriton3dPadded; do
    list+="$s$1,$s$1@split=1,$s$1@split*2,$s$1@split/2,"
  done
  echo "${list%,}"
}
alternatives() {  # alternatives NAME LIMIT DIRECTION BATCHES SOLVERS [EVERY]
  timeout "$2" python3 bench/solver_alternatives.py --solvers "$5" --types "${alt_types:-FP32,FP16}" \
    --min-solvers "${alt_min:-2}" \
    --directions "$3" --layouts NCHW,NHWC --batches "$4" --held-out --every "${6:-1}" \
    --only "$keys_3d" --budget-s "$(( $2 - 15 ))" --out "$out/$1" > "$out/$1.log" 2>&1
  stamp "$1 rc=$?"; tail -30 "$out/$1.log"
}

if want grid; then
  GRID_SOLVER=ConvTriton3d TESTS_S="${GRID_S:-240}" timeout 420 bash "$here/gpu_test_all.sh" \
    "$out/grid" > "$out/grid.txt" 2>&1
  stamp "grid rc=$?"; tail -8 "$out/grid.txt"
fi
source "$here/_gpu_env.sh"
device_stamp "$out/device.txt" > /dev/null
if want zoo; then
  sys=/tmp/sys
  sm90_package "$sys" "$out"
  MIOPEN_SYSTEM_DB_PATH="$sys" timeout "${ZOO_S:-240}" python3 bench/zoo.py \
    --networks r2plus1d_18,unet3d --types FP16,FP32 --batches 8 \
    --budget-s "$(( ${ZOO_S:-240} - 30 ))" --out "$out/zoo_3d" > "$out/zoo.log" 2>&1
  stamp "zoo rc=$?"; tail -25 "$out/zoo.log"
fi
if want split_f; then
  alternatives split_f "${SPLIT_S:-200}" F 1,8 "$(split_solvers Fwd)"
fi
if want split_b; then
  alternatives split_b "${SPLIT_S:-200}" B 1,8 "$(split_solvers Bwd)"
fi
if want ab; then
  ab_solvers="ConvTriton3dTf32x3Fwd,ConvTriton3dFwd,ConvTriton3dViaNdhwcFwd,ConvTriton3dPaddedFwd"
  ab_solvers="${AB_SOLVERS:-$ab_solvers,${ab_solvers//Fwd/Bwd}}"
  ab_files="${AB_FILES:-}${AB_KERNEL:+ kernels/conv_triton_3d.py=$AB_KERNEL}"
  [[ -n "${ab_files// /}" ]] || { echo "ab: AB_KERNEL or AB_FILES names the state before" >&2; exit 2; }
  before=/tmp/ab_before_tree
  rm -rf "$before" && cp -r . "$before"
  for pair in $ab_files; do
    cp "${pair#*=}" "$before/${pair%%=*}" || { echo "ab: cannot place $pair" >&2; exit 2; }
  done
  (cd "$before" && source bench/_gpu_env.sh && MIOPEN_CUSTOM_CACHE_DIR=/tmp/mkcache_before \
    timeout "${AB_S:-200}" python3 bench/solver_alternatives.py --solvers "$ab_solvers" \
    --types "${AB_TYPES:-FP32,FP16}" --directions F,B --layouts NCHW,NHWC --batches 32 \
    --held-out --every 3 --min-solvers 1 \
    --only "$keys_3d" --budget-s "$(( ${AB_S:-200} - 15 ))" --out "$out/ab_before" \
    > "$out/ab_before.log" 2>&1)
  stamp "ab before rc=$?"; tail -12 "$out/ab_before.log"
  source "$here/_gpu_env.sh"  # this tree again
  alt_types="${AB_TYPES:-FP32,FP16}" alt_min=1 alternatives ab_after "${AB_S:-200}" F,B 32 "$ab_solvers" 3
fi
