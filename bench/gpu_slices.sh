#!/usr/bin/env bash
# On the GPU machine, one call of under 600 s: the 3-D channels-last layers of one depth tap at
# depth stride 1 on the slices solvers (solvers/triton_slices.py: the 2-D implicit GEMM over
# N*D images) and on the GEMM library (1x1x1 at stride 1), measured in place.
# The sm90-132 package of the default manifests first (bench/_gpu_env.sh `sm90_package`), then:
#   grid/    the GPU grid's cases of the slices solvers, every direction, type and layout they
#            take, against float64, Triton hidden;  GRID_S
#   alt.*    bench/solver_alternatives.py: the 3-D solvers, the slices solvers and the GEMM
#            library side by side on those layers of the zoo's and the held-out networks, FP16
#            NDHWC, every direction (the layers' keys: one depth tap, no depth padding, depth
#            stride 1);  ALT_S
#   temporal.*  the same over the temporal layers (one tap in height and width, stride 1 and no
#            padding there: R(2+1)-D's 3x1x1), both layouts, the relaid 3-D solvers among
#            them (not a default step);  TEMPORAL_S
#   zoo.*    find's pick against cuDNN on the 3-D networks (R(2+1)D-18, 3D U-Net; X3D-S and
#            R3D-18 held out), FP16 NDHWC, every direction (bench/zoo_compare.py against
#            zoo_h200-fb-9ec5af9, zoo_h200-w-9ec5af9 and zoo_h200-x3d-fa47541 for before);
#            ZOO_S
# All at batch 32. A summary line per step; STEPS names the steps (default grid,alt,zoo):
#
#   bash bench/gpu_slices.sh OUTDIR
#   NO_PACKAGE=1 STEPS=grid,temporal bash bench/gpu_slices.sh OUTDIR
# NO_PACKAGE=1 skips the package (the grid compiles its own objects; the alternatives then
# compile theirs on first use, outside the timings, and count them).
set -uo pipefail
out="${1:?usage: [STEPS=...] bash bench/gpu_slices.sh OUTDIR}"
here="$(dirname "$0")"
mkdir -p "$out"
t0=$(date +%s)
stamp() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
steps="${STEPS:-grid,alt,zoo}"
want() { [[ ",$steps," == *",$1,"* ]]; }
source "$here/_gpu_env.sh"
device_stamp "$out/device.txt" > /dev/null
if [ -z "${NO_PACKAGE:-}" ]; then
  sys=/tmp/sys
  sm90_package "$sys" "$out"
  export MIOPEN_SYSTEM_DB_PATH="$sys"
fi

if want grid; then
  GRID_SOLVER=ConvTritonImplicitGemmSlices,ConvTritonImplicitGemmTf32Slices,\
ConvTritonImplicitGemmTf32x3Slices,ConvTritonImplicitGemmPaddedSlices \
  TESTS_S="${GRID_S:-100}" \
    bash "$here/gpu_test_all.sh" "$out/grid" > "$out/grid.log" 2>&1
  stamp "grid: $(grep -E 'passed|failed' "$out/grid/gpu_tests.txt" | tail -1)"
fi
alternatives() {  # alternatives NAME LIMIT LAYOUTS KEY-REGEX SOLVER,...
  local name="$1" limit="$2" layouts="$3" only="$4" solvers="$5"
  timeout "$limit" python3 bench/solver_alternatives.py --solvers "$solvers" \
    --networks r2plus1d_18,unet3d,x3d_s,r3d_18 --types FP16 --directions F,B,W \
    --layouts "$layouts" --batches 32 --held-out --only "$only" \
    --budget-s "$(( limit - 15 ))" --out "$out/$name" > "$out/$name.log" 2>&1
  stamp "$name rc=$?"; tail -24 "$out/$name.log"
}
if want alt; then
  solvers=""
  for d in Fwd Bwd Wrw; do
    solvers+="ConvTriton3d$d,ConvTriton3dPadded$d,ConvTritonImplicitGemmSlices$d,"
    solvers+="ConvTritonImplicitGemmPaddedSlices$d,ConvBlasGemm1x1$d,"
  done
  alternatives alt "${ALT_S:-180}" NHWC \
    '^[0-9]+-[0-9]+-[0-9]+-[0-9]+-1x[0-9]+x[0-9]+-([0-9]+-){5}0x[0-9]+x[0-9]+-1x' \
    "${solvers}ConvTriton3dTapsWrw,ConvTriton3dPaddedTapsWrw"
fi
if want temporal; then
  solvers=""
  for d in Fwd Bwd Wrw; do
    solvers+="ConvTriton3d$d,ConvTriton3dPadded$d,ConvTriton3dViaNdhwc$d,"
    solvers+="ConvTritonImplicitGemmSlices$d,ConvTritonImplicitGemmPaddedSlices$d,"
  done
  alternatives temporal "${TEMPORAL_S:-150}" NHWC,NCHW \
    '^(?!.*_g)[0-9]+-[0-9]+-[0-9]+-[0-9]+-([2-9]|[1-9][0-9]+)x1x1-([0-9]+-){5}[0-9]+x0x0-[0-9]+x1x1-' \
    "${solvers}ConvTriton3dTapsWrw,ConvTriton3dPaddedTapsWrw,ConvTriton3dViaNdhwcTapsWrw"
fi
if want zoo; then
  limit="${ZOO_S:-150}"
  timeout "$limit" python3 bench/zoo.py --networks r2plus1d_18,unet3d,x3d_s,r3d_18 \
    --types FP16 --directions F,B,W --layouts NHWC --batches 32 --held-out \
    --budget-s "$(( limit - 20 ))" --out "$out/zoo" > "$out/zoo.log" 2>&1
  stamp "zoo rc=$? $(grep -E '^(FP|BF)[0-9]+-' "$out/zoo.log" | head -6 | tr '\n' ';')"
fi
stamp "done"
