#!/usr/bin/env bash
# On the GPU machine, in three calls (below): the rules that landed on committed timings without
# a run of their own, measured in their new places (bench/results/README.md names each one's
# estimate).
# The sm90-132 package of the default manifests first (bench/_gpu_env.sh `sm90_package`), then:
#   grid/      the GPU grid's cases of the 2-D Via solvers' backward data and weights (the
#              packed grouped and strided 1x1 routes, BF16 stems through NCHW among them) and
#              of the FP32 3-D routes (through NDHWC, padded), against float64, Triton
#              hidden;  GRID_S
#   blas_w.*   the GEMM library against both implicit GEMM kernels on the FP32 backward weights
#              of the zoo's 1x1 layers, NHWC (BLAS_FIRST_ESTIMATED), for bench/first_place.py;
#              ALT_S
#   blas/      tests/gpu/test_blas_gpu.py (the library's solvers, the copies' ones among them,
#              against float64);  BLAS_S
#   packed.*   find's pick against cuDNN on the grouped layers' FP16 and BF16 backward weights
#              in NCHW (VIA_NHWC_PACKED);  PACKED_S
#   fp32_w.*   the same on FP32 backward weights NHWC, every second layer (IEEE_FIRST and
#              BLAS_FIRST_ESTIMATED);  FP32_S
#   nchw.*     the same on FP16 NCHW, every direction, of the networks with large strided
#              1x1 layers or misaligned planes (VIA_NHWC_STRIDED_ONE_TAP and _FROM,
#              VIA_MISALIGNED);  NCHW_S
#   fp32_3d.*  the same on the 3-D layers' FP32 forward and backward data, both layouts
#              (the spec's RELAID_TF32X3 and RELAID_TF32X3_PADDED);  FP32_3D_S
#   g16.*      narrower tiles of the implicit GEMM against its usual ones on the grouped
#              layers of 16 and 32 channels a group (ResNeXt's layer3 and layer4, 2.0-3.7x
#              cuDNN in FP16 NHWC: a 64-wide reduction block over 16 channels is three
#              quarters zeros, a 32-wide tile's columns over 16 filters half), forward
#              and backward data, both layouts; not in the default steps;  G16_S
#   grouped.*  find's pick against cuDNN on the grouped layers' FP16 and BF16 forward and
#              backward data, both layouts (the tile as wide as a group in place);  GROUPED_S
#   g16w.*     narrower tiles of backward weights on the same layers as g16 (filling split);
#              G16W_S
#   dw_grid/   the GPU grid's cases of the 2-D depthwise family, every direction (the phased
#              stride-2 and the pair-aligned objects among them) against float64, Triton
#              hidden;  DW_GRID_S
#   dw.*       find's pick against cuDNN on the depthwise layers' FP16 and BF16 backward data
#              NHWC (the phased objects in place; bench/zoo_compare.py against
#              zoo_h200-dw-b-f2b3b54 and zoo_h200-dw-fb-b29a063 for before);  DW_S
#   dw3d_grid/ the GPU grid's cases of the 3-D depthwise family, every direction, against
#              float64, Triton hidden;  DW3D_GRID_S
#   dwa.*      the depthwise objects assuming pairs (16-bit 3x3) or multiples of 4 (FP32)
#              against the unaligned ones they replaced, on the zoo's depthwise layers of such
#              channels, every type and direction, channels-last (bench/depthwise_align_ab.py:
#              two arms of DWA_S each, then their comparison);  DWA_S
#   x3d.*      find's pick against cuDNN on the held-out X3D-S, FP16, every direction, both
#              layouts (its depthwise 3x3x3 and 5x1x1 layers on the 3-D depthwise family, not
#              timed before);  X3D_S
# All at batch 32, the held-out networks apart. A summary line per step. STEPS names the steps
# to run (default all but g16, grouped, g16w, dw_grid, dw, dw3d_grid, dwa and x3d); the whole
# takes six calls of under 600 s, the later ones on the warm machine (its package build then
# a no-op). The H200 runs of 2026-12-05 made every one of them (bench/results/README.md):
#
#   STEPS=g16,blas bash bench/gpu_rules.sh OUTDIR
#   STEPS=grid,blas_w,packed,fp32_w bash bench/gpu_rules.sh OUTDIR
#   STEPS=nchw,fp32_3d bash bench/gpu_rules.sh OUTDIR
#   STEPS=dw_grid,dw3d_grid,dwa bash bench/gpu_rules.sh OUTDIR
#   STEPS=dw,x3d bash bench/gpu_rules.sh OUTDIR
#   STEPS=grouped,g16w bash bench/gpu_rules.sh OUTDIR
set -uo pipefail
out="${1:?usage: [STEPS=...] bash bench/gpu_rules.sh OUTDIR}"
here="$(dirname "$0")"
mkdir -p "$out"
t0=$(date +%s)
stamp() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
steps="${STEPS:-grid,blas,blas_w,packed,fp32_w,nchw,fp32_3d}"
want() { [[ ",$steps," == *",$1,"* ]]; }
source "$here/_gpu_env.sh"
device_stamp "$out/device.txt" > /dev/null
sys=/tmp/sys
sm90_package "$sys" "$out"
export MIOPEN_SYSTEM_DB_PATH="$sys"

if want grid; then
  GRID_SOLVER=ConvTritonImplicitGemmViaNhwcWrw,ConvTritonImplicitGemmViaNhwcBwd,\
ConvTritonImplicitGemmViaNchwBwd,ConvTriton3dViaNdhwcTf32x3,ConvTriton3dPaddedTf32x3 \
  TESTS_S="${GRID_S:-180}" \
    bash "$here/gpu_test_all.sh" "$out/grid" > "$out/grid.log" 2>&1
  stamp "grid: $(grep -E 'passed|failed' "$out/grid/gpu_tests.txt" | tail -1)"
fi
zoo() {  # zoo NAME LIMIT zoo.py-arguments...
  local name="$1" limit="$2"; shift 2
  timeout "$limit" python3 bench/zoo.py "$@" --batches 32 --held-out \
    --budget-s "$(( limit - 20 ))" --out "$out/$name" > "$out/$name.log" 2>&1
  stamp "$name rc=$? $(grep -E '^(FP|BF)[0-9]+-' "$out/$name.log" | head -4 | tr '\n' ';')"
}
if want blas_w; then
  limit="${ALT_S:-90}"
  timeout "$limit" python3 bench/solver_alternatives.py --solvers \
    ConvBlasGemm1x1Wrw,ConvTritonImplicitGemmTf32x3Wrw,ConvTritonImplicitGemmWrw \
    --types FP32 --directions W --layouts NHWC --batches 32 --only=-1x1- --held-out \
    --budget-s "$(( limit - 15 ))" --out "$out/blas_w" > "$out/blas_w.log" 2>&1
  stamp "blas_w rc=$?"; tail -6 "$out/blas_w.log"
fi
if want blas; then
  mkdir -p "$out/blas"
  timeout "${BLAS_S:-90}" python3 -m pytest -q -p no:cacheprovider tests/gpu/test_blas_gpu.py \
    -n 8 > "$out/blas/gpu_tests.txt" 2>&1
  stamp "blas tests rc=$? $(tail -1 "$out/blas/gpu_tests.txt")"
fi
want packed && zoo packed "${PACKED_S:-70}" --types FP16,BF16 --directions W --layouts NCHW \
  --classes grouped
want fp32_w && zoo fp32_w "${FP32_S:-120}" --types FP32 --directions W --layouts NHWC --every 2
want nchw && zoo nchw "${NCHW_S:-200}" --types FP16 --directions F,B,W --layouts NCHW \
  --networks retinanet_resnet50_fpn,deeplabv3_resnet50,fcn_resnet50,inception_v3,squeezenet1_1
if want g16; then
  limit="${G16_S:-240}"
  timeout "$limit" python3 bench/solver_alternatives.py --solvers \
ConvTritonImplicitGemmFwd,ConvTritonImplicitGemmFwd@64:16:16:8:4:3,\
ConvTritonImplicitGemmFwd@128:16:16:8:4:3,ConvTritonImplicitGemmFwd@64:32:32:8:4:3,\
ConvTritonImplicitGemmFwd@128:32:32:8:4:3,\
ConvTritonImplicitGemmBwd,ConvTritonImplicitGemmBwd@64:16:16:8:4:3,\
ConvTritonImplicitGemmBwd@128:16:16:8:4:3,ConvTritonImplicitGemmBwd@64:32:32:8:4:3,\
ConvTritonImplicitGemmBwd@128:32:32:8:4:3 \
    --types FP16 --directions F,B --layouts NHWC,NCHW --batches 32 --held-out \
    --networks resnext50_32x4d,resnext101_64x4d \
    --only '^(512-(14|28)-.*_g32|1024-(14|28)-.*_g64|1024-(7|14)-.*_g32|2048-(7|14)-.*_g64)$' \
    --budget-s "$(( limit - 15 ))" --out "$out/g16" > "$out/g16.log" 2>&1
  stamp "g16 rc=$?"; tail -12 "$out/g16.log"
fi
want grouped && zoo grouped "${GROUPED_S:-220}" --types FP16,BF16 --directions F,B \
  --layouts NCHW,NHWC --classes grouped
if want g16w; then
  limit="${G16W_S:-60}"
  timeout "$limit" python3 bench/solver_alternatives.py --solvers \
ConvTritonImplicitGemmWrw,ConvTritonImplicitGemmWrw@64:16:64:8:4:3:0,\
ConvTritonImplicitGemmWrw@64:32:64:8:4:3:0,ConvTritonImplicitGemmWrw@128:16:64:8:4:3:0,\
ConvTritonImplicitGemmWrw@64:16:128:8:4:3:0,ConvTritonImplicitGemmWrw@64:32:32:8:4:3:0 \
    --types FP16 --directions W --layouts NHWC,NCHW --batches 32 --held-out \
    --networks resnext50_32x4d,resnext101_64x4d \
    --only '^(512-(14|28)-.*_g32|1024-(14|28)-.*_g64|1024-(7|14)-.*_g32|2048-(7|14)-.*_g64)$' \
    --budget-s "$(( limit - 10 ))" --out "$out/g16w" > "$out/g16w.log" 2>&1
  stamp "g16w rc=$?"; tail -14 "$out/g16w.log"
fi
want fp32_3d && zoo fp32_3d "${FP32_3D_S:-150}" --types FP32 --directions F,B \
  --layouts NCHW,NHWC --classes 3-D
if want dw_grid; then
  GRID_SOLVER=ConvTritonDepthwiseFwd,ConvTritonDepthwiseBwd,ConvTritonDepthwiseWrw \
    TESTS_S="${DW_GRID_S:-120}" \
    bash "$here/gpu_test_all.sh" "$out/dw_grid" > "$out/dw_grid.log" 2>&1
  stamp "dw_grid: $(grep -E 'passed|failed' "$out/dw_grid/gpu_tests.txt" | tail -1)"
fi
want dw && zoo dw "${DW_S:-200}" --types FP16,BF16 --directions B --layouts NHWC \
  --classes depthwise
if want dw3d_grid; then
  GRID_SOLVER=ConvTritonDepthwise3d TESTS_S="${DW3D_GRID_S:-120}" \
    bash "$here/gpu_test_all.sh" "$out/dw3d_grid" > "$out/dw3d_grid.log" 2>&1
  stamp "dw3d_grid: $(grep -E 'passed|failed' "$out/dw3d_grid/gpu_tests.txt" | tail -1)"
fi
if want dwa; then
  limit="${DWA_S:-200}"
  for arm in aligned unaligned; do
    timeout "$limit" python3 bench/depthwise_align_ab.py run --arm "$arm" \
      --budget-s "$(( limit - 20 ))" --out "$out/dwa_$arm" > "$out/dwa_$arm.log" 2>&1
    stamp "dwa $arm rc=$?"
  done
  python3 bench/depthwise_align_ab.py compare "$out/dwa_aligned.json" \
    "$out/dwa_unaligned.json" --out "$out/dwa" 2>&1 | tail -12
fi
want x3d && zoo x3d "${X3D_S:-300}" --types FP16 --directions F,B,W --layouts NCHW,NHWC \
  --networks x3d_s
stamp "done"
