#!/usr/bin/env bash
# On the GPU machine, one call of under 600 s: the im2col solvers (solvers/blas_im2col.py),
# backward weights of the layers with 1-4 channels on one side and the forward. No package:
# the gather's objects are compiled outside the timings.
# Steps (STEPS, default tests,fp32,wplain,fwd,bwd,planar,d3,tf32,probe,gather):
#   tests  tests/gpu/test_im2col_blas_gpu.py (against float64, and in a CUDA graph);  TESTS_S
#   fp32   bench/solver_alternatives.py, FP32 (IEEE cuDNN) backward weights NHWC of the zoo's
#          and the held-out networks' layers of 1-4 channels on a side, batches 32, 8 and 1:
#          the library's im2col form beside the implicit GEMMs and the FP32-unit kernels
#          (BATCHES: others);  FP32_S
#   wplain bench/solver_alternatives.py, FP32 (IEEE) then FP16 backward weights NHWC of every
#          WPLAIN_EVERY-th (default 4) layer of the zoo and the held-out networks but the 1x1
#          ones, batch 32: the library's im2col form beside the implicit GEMMs;  WPLAIN_S (each)
#   fwd    bench/solver_alternatives.py, FP16 forward NHWC, every FWD_EVERY-th (default 3)
#          layer of the zoo and the held-out networks but the 1x1 ones, batch 32: the
#          library's im2col form beside the implicit GEMM;  FWD_S
#   bwd    bench/solver_alternatives.py, FP16 backward data NHWC at unit stride, every
#          BWD_EVERY-th (default 3) layer but the 1x1 ones, batch 32: the library's im2col
#          form beside the implicit GEMM;  BWD_S
#   planar bench/solver_alternatives.py, FP16 NCHW forward, backward data (unit stride) and
#          backward weights, every PLANAR_EVERY-th (default 6) layer but the 1x1 ones, batch
#          32: the library's im2col form (a product per image) beside the implicit GEMM
#          through channels-last copies and on the planes;  PLANAR_S
#   d3     bench/solver_alternatives.py, FP32 (IEEE) 3-D layers but the 1x1x1 ones, forward,
#          backward data (unit stride) and weights, both layouts, batch 32: the library's
#          im2col form beside immediate mode's first choice;  D3_S
#   tf32   the fp32 step at the TF32 math (cuDNN's TF32 on);  TF32_S
#   probe  bench/wrw_im2col_probe.py (the product's parts on PyTorch, both layouts);  PROBE_S
#   gather bench/im2col_gather_probe.py (the form's gather alone, the whole form, a copy of the
#          column matrix's bytes, cuDNN: where the time goes);  GATHER_S
# Every step also times immediate mode's first choice (`pick`: what a first call gets now).
# Output under OUTDIR; a summary line per step.
#
#   bash bench/gpu_im2col.sh OUTDIR
set -uo pipefail
out="${1:?usage: [STEPS=...] bash bench/gpu_im2col.sh OUTDIR}"
here="$(cd "$(dirname "$0")" && pwd)"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
t0=$(date +%s)
stamp() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
steps="${STEPS:-tests,fp32,wplain,fwd,bwd,planar,d3,tf32,probe,gather}"
want() { [[ ",$steps," == *",$1,"* ]]; }
source "$here/_gpu_env.sh"
device_stamp "$out/device.txt" > /dev/null
narrow='^([1-4]-[0-9]+-[0-9]+-[0-9]+x[0-9]+-[0-9]+|[0-9]+-[0-9]+-[0-9]+-[0-9]+x[0-9]+-[1-4])-'
if want tests; then
  timeout "${TESTS_S:-90}" python3 -m pytest -q -p no:cacheprovider \
    tests/gpu/test_im2col_blas_gpu.py > "$out/gpu_tests.txt" 2>&1
  stamp "tests rc=$?"; tail -4 "$out/gpu_tests.txt"
fi
alternatives() {  # alternatives NAME TYPE SOLVERS LIMIT
  timeout "$4" python3 bench/solver_alternatives.py --require ConvBlasIm2col \
    --solvers "pick,$3" --types "$2" \
    --directions W --layouts NHWC --batches "${BATCHES:-32,8,1}" --held-out --only "$narrow" \
    --max-gb 16 --budget-s "$(( $4 - 15 ))" --out "$out/$1" > "$out/$1.log" 2>&1
  stamp "$1 rc=$?"; tail -16 "$out/$1.log"
}
if want fp32; then
  alternatives fp32_w FP32 "ConvBlasIm2colWrw,ConvTritonImplicitGemmTf32x3Wrw,ConvTritonImplicitGemmWrw,ConvTritonFmaFewCWrw,ConvTritonFmaFewKWrw,ConvTritonSmallCWrw" \
    "${FP32_S:-200}"
fi
if want wplain; then
  for t in FP32 FP16; do
    timeout "${WPLAIN_S:-80}" python3 bench/solver_alternatives.py --require ConvBlasIm2col \
      --solvers "pick,ConvBlasIm2colWrw,ConvTritonImplicitGemmTf32x3Wrw,ConvTritonImplicitGemmWrw" \
      --types "$t" --directions W --layouts NHWC --batches 32 --held-out \
      --every "${WPLAIN_EVERY:-4}" --only '^(?![0-9]+-[0-9]+-[0-9]+-1x1-)' --max-gb 16 \
      --budget-s "$(( ${WPLAIN_S:-80} - 15 ))" --out "$out/wplain_$t" > "$out/wplain_$t.log" 2>&1
    stamp "wplain $t rc=$?"; tail -12 "$out/wplain_$t.log"
  done
fi
if want fwd; then
  timeout "${FWD_S:-150}" python3 bench/solver_alternatives.py --require ConvBlasIm2col \
    --solvers pick,ConvBlasIm2colFwd,ConvTritonImplicitGemmFwd --types FP16 --directions F \
    --layouts NHWC --batches 32 --held-out --every "${FWD_EVERY:-3}" \
    --only '^(?![0-9]+-[0-9]+-[0-9]+-1x1-)' --max-gb 16 --budget-s "$(( ${FWD_S:-150} - 15 ))" \
    --out "$out/fp16_f" > "$out/fp16_f.log" 2>&1
  stamp "fwd rc=$?"; tail -16 "$out/fp16_f.log"
fi
if want bwd; then
  timeout "${BWD_S:-120}" python3 bench/solver_alternatives.py --require ConvBlasIm2col \
    --solvers pick,ConvBlasIm2colBwd,ConvTritonImplicitGemmBwd --types FP16 --directions B \
    --layouts NHWC --batches 32 --held-out --every "${BWD_EVERY:-3}" \
    --only '^[0-9]+-[0-9]+-[0-9]+-(?!1x1-)[0-9]+x[0-9]+-[0-9]+-[0-9]+-[0-9]+-[0-9]+-[0-9]+x[0-9]+-1x1-' \
    --max-gb 16 --budget-s "$(( ${BWD_S:-120} - 15 ))" \
    --out "$out/fp16_b" > "$out/fp16_b.log" 2>&1
  stamp "bwd rc=$?"; tail -16 "$out/fp16_b.log"
fi
if want planar; then
  ig=ConvTritonImplicitGemm
  timeout "${PLANAR_S:-120}" python3 bench/solver_alternatives.py --require ConvBlasIm2col \
    --solvers "pick,ConvBlasIm2colFwd,ConvBlasIm2colBwd,ConvBlasIm2colWrw,${ig}ViaNhwcFwd,\
${ig}ViaNhwcBwd,${ig}ViaNhwcWrw,${ig}Fwd,${ig}Bwd,${ig}Wrw" --types FP16 --directions F,B,W \
    --layouts NCHW --batches 32 --held-out --every "${PLANAR_EVERY:-6}" \
    --only '^(?![0-9]+-[0-9]+-[0-9]+-1x1-)' --max-gb 16 \
    --budget-s "$(( ${PLANAR_S:-120} - 15 ))" --out "$out/fp16_nchw" > "$out/fp16_nchw.log" 2>&1
  stamp "planar rc=$?"; tail -20 "$out/fp16_nchw.log"
fi
if want d3; then
  timeout "${D3_S:-90}" python3 bench/solver_alternatives.py --require ConvBlasIm2col \
    --solvers "pick,ConvBlasIm2colFwd,ConvBlasIm2colBwd,ConvBlasIm2colWrw" --types FP32 \
    --directions F,B,W \
    --layouts NCHW,NHWC --batches 32 --held-out \
    --only '^[0-9]+-[0-9]+-[0-9]+-[0-9]+-(?!1x1x1-)[0-9]+x[0-9]+x[0-9]+-' --max-gb 16 \
    --budget-s "$(( ${D3_S:-90} - 15 ))" --out "$out/fp32_3d" > "$out/fp32_3d.log" 2>&1
  stamp "d3 rc=$?"; tail -20 "$out/fp32_3d.log"
fi
if want tf32; then
  alternatives tf32_w TF32 "ConvBlasIm2colTf32Wrw,ConvTritonImplicitGemmTf32Wrw,ConvTritonSmallCWrw" \
    "${TF32_S:-90}"
fi
if want probe; then
  timeout "${PROBE_S:-80}" python3 bench/wrw_im2col_probe.py --out "$out/probe" \
    > "$out/probe.log" 2>&1
  stamp "probe rc=$?"; tail -8 "$out/probe.log"
fi
if want gather; then
  timeout "${GATHER_S:-90}" python3 bench/im2col_gather_probe.py --out "$out/gather" \
    > "$out/gather.log" 2>&1
  stamp "gather rc=$?"; tail -12 "$out/gather.log"
fi
