#!/usr/bin/env bash
# On the GPU machine, no package (objects compile on first use, outside the timings): the
# few-channel kernels (kernels/conv_triton_3d_smallc.py) with their column index split by a
# multiply and a shift instead of signed divisions. Steps (STEPS, default all, in order):
#   tests     the GPU grid's cases of the few-channel solvers (3-D and 2-D, every direction,
#             type and layout) against float64, Triton hidden;  TESTS_S
#   variants  bench/smallc_fwd_variants.py: the forward kernel before, as shipped and over
#             the depth taps, against cuDNN on the few-channel 3-D stems, FP16, BF16, FP32,
#             both layouts, at the solvers' tile and the BLOCK_M values of BLOCK_M
#             (default 128,256) that differ from it;  VARIANTS_S
#   zoo       bench/zoo.py: find's pick against cuDNN over the zoo's few-channel class
#             (held-out networks apart), ZOO_TYPES (default FP16,BF16,FP32), ZOO_DIRECTIONS
#             (default F), both layouts, batch 32;  ZOO_S
#
#   bash bench/gpu_smallc_fwd.sh OUTDIR
set -uo pipefail
out="${1:?usage: bash bench/gpu_smallc_fwd.sh OUTDIR}"
here="$(dirname "$0")"
mkdir -p "$out"
t0=$(date +%s)
stamp() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
steps=" ${STEPS:-tests variants zoo} "
want() { [[ "$steps" == *" $1 "* ]]; }
if want tests; then
  GRID_SOLVER=ConvTriton3dSmallC,ConvTritonSmallC TESTS_S="${TESTS_S:-200}" \
    bash "$here/gpu_test_all.sh" "$out/grid" > "$out/grid.log" 2>&1
  stamp "tests rc=$? $(tail -1 "$out/grid/gpu_tests.txt")"
fi
source "$here/_gpu_env.sh"
device_stamp "$out/device.txt"
if want variants; then
  timeout "${VARIANTS_S:-200}" python3 bench/smallc_fwd_variants.py \
    --block-m "${BLOCK_M:-128,256}" --out "$out/variants" > "$out/variants.log" 2>&1
  stamp "variants rc=$?"; cat "$out/variants.log" | grep -v Warning
fi
if want zoo; then
  timeout "${ZOO_S:-200}" python3 bench/zoo.py --types "${ZOO_TYPES:-FP16,BF16,FP32}" \
    --directions "${ZOO_DIRECTIONS:-F}" --layouts NCHW,NHWC --classes few-channel \
    --batches 32 --held-out --budget-s "$(( ${ZOO_S:-200} - 15 ))" \
    --out "$out/zoo" > "$out/zoo.log" 2>&1
  stamp "zoo rc=$?"; tail -30 "$out/zoo.log"
fi
