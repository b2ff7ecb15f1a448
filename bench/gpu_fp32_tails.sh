#!/usr/bin/env bash
# On the GPU machine, one call of under 600 s: the FP32 rows the kn2row runs left above 2.5x
# IEEE cuDNN (bench/results/kn2row_h100/immediate/): ESRGAN's 64 -> 3 output layer at
# 2048x2048 from batch 8 on (x and dx past 2**31 elements) and the SD VAE's 1x1 latent layers
# (4 -> 4 and 8 -> 8 at 64x64). No package: every object is compiled outside the timings.
# Steps (STEPS, default tests,big,pointwise,zoo):
#   tests      tests/gpu/test_fp32_chunks_gpu.py (the ESRGAN layer's first choices at batch 8
#              against float64), test_kn2row_blas_gpu.py and test_blas_gpu.py;  TESTS_S
#   big        bench/solver_alternatives.py on the ESRGAN layer at batch 8, forward and
#              backward data, both layouts: kn2row's library form and the chunk solvers;
#              BIG_S
#   pointwise  the same on the VAE's 1x1 layers of 4 and 8 channels, every direction, both
#              layouts, batches 32, 8 and 1: the FP32-unit kernels, the few-channel kernels,
#              the three-product implicit GEMM and the GEMM library;  POINTWISE_S
#   zoo        bench/zoo.py (immediate mode's choice, as a user meets it) on the few-channel
#              layers of ESRGAN and the SD VAE, FP32 forward and backward data, batches 8 and
#              1;  ZOO_S
#   vae        the same on the SD VAE's 1x1 layers, batches 32, 8 and 1;  VAE_S
#   tf32       bench/solver_alternatives.py at the TF32 math (cuDNN's TF32 on) on the
#              forward layers of 1-8 filters and the backward data of 1-8 input channels of
#              the SD UNet and VAE and ESRGAN, batch 32: kn2row's library form in both maths
#              beside the TF32 implicit GEMM and the FP32-unit kernels;  TF32_S
#   sample     the same on every SAMPLE_EVERY-th layer (default 4) of the zoo and the
#              held-out networks, SAMPLE_TYPES (default FP32), every direction and layout,
#              batch 32 (what the budget reaches);  SAMPLE_S
# Output under OUTDIR; a summary line per step.
#
#   bash bench/gpu_fp32_tails.sh OUTDIR
#   STEPS=zoo bash bench/gpu_fp32_tails.sh OUTDIR
set -uo pipefail
out="${1:?usage: [STEPS=...] bash bench/gpu_fp32_tails.sh OUTDIR}"
here="$(cd "$(dirname "$0")" && pwd)"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
t0=$(date +%s)
stamp() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
steps="${STEPS:-tests,big,pointwise,zoo,vae}"
want() { [[ ",$steps," == *",$1,"* ]]; }
source "$here/_gpu_env.sh"
device_stamp "$out/device.txt" > /dev/null
if want tests; then
  timeout "${TESTS_S:-240}" python3 -m pytest -q -p no:cacheprovider \
    tests/gpu/test_fp32_chunks_gpu.py tests/gpu/test_kn2row_blas_gpu.py \
    tests/gpu/test_blas_gpu.py > "$out/gpu_tests.txt" 2>&1
  stamp "tests rc=$?"; tail -4 "$out/gpu_tests.txt"
fi
alternatives() {  # alternatives NAME DIRECTIONS SOLVERS BATCHES ONLY LIMIT
  timeout "$6" python3 bench/solver_alternatives.py --solvers "$3" --types FP32 \
    --directions "$2" --layouts NCHW,NHWC --batches "$4" --networks esrgan,sd15_vae \
    --only "$5" --max-gb 16 --budget-s "$(( $6 - 15 ))" --out "$out/$1" > "$out/$1.log" 2>&1
  stamp "$1 rc=$?"; tail -16 "$out/$1.log"
}
if want big; then
  alternatives big_f F "ConvBlasKn2RowFwd,ConvTritonFmaFewKChunksFwd,ConvTritonImplicitGemmChunksFwd" \
    8 '^64-2048-2048-3x3-3-2048-2048-8-' "${BIG_S:-90}"
  alternatives big_b B "ConvTritonFmaChunksBwd,ConvTritonImplicitGemmChunksBwd" \
    8 '^3-2048-2048-3x3-64-2048-2048-8-' "${BIG_S:-90}"
fi
if want pointwise; then
  one='^[1-8]-64-64-1x1-[1-8]-'
  alternatives pointwise_f F "ConvTritonFmaFwd,ConvTritonFmaFewKFwd,ConvTritonSmallCFwd,ConvTritonImplicitGemmTf32x3Fwd,ConvBlasGemm1x1Fwd,ConvBlasGemm1x1ViaNhwcFwd" \
    32,8,1 "$one" "${POINTWISE_S:-60}"
  alternatives pointwise_b B "ConvTritonFmaBwd,ConvTritonFmaFewKBwd,ConvTritonSmallCBwd,ConvTritonImplicitGemmTf32x3Bwd,ConvBlasGemm1x1Bwd,ConvBlasGemm1x1ViaNhwcBwd" \
    32,8,1 "$one" "${POINTWISE_S:-60}"
  alternatives pointwise_w W "ConvTritonFmaFewKWrw,ConvTritonFmaFewCWrw,ConvTritonSmallCWrw,ConvTritonImplicitGemmTf32x3Wrw,ConvBlasGemm1x1Wrw,ConvBlasGemm1x1ViaNhwcWrw" \
    32,8,1 "$one" "${POINTWISE_S:-60}"
fi
if want zoo; then
  timeout "${ZOO_S:-150}" python3 bench/zoo.py --networks esrgan,sd15_vae --types FP32 \
    --directions F,B --batches 8,1 --classes few-channel --max-gb 16 --budget-s "$(( ${ZOO_S:-150} - 15 ))" \
    --out "$out/zoo_b8_b1" > "$out/zoo_b8_b1.log" 2>&1
  stamp "zoo rc=$?"; tail -12 "$out/zoo_b8_b1.log"
fi
if want vae; then
  timeout "${VAE_S:-120}" python3 bench/zoo.py --networks sd15_vae --pointwise --types FP32 \
    --directions F,B --batches 32,8,1 --budget-s "$(( ${VAE_S:-120} - 15 ))" \
    --out "$out/zoo_vae_pointwise" > "$out/zoo_vae_pointwise.log" 2>&1
  stamp "vae rc=$?"; tail -12 "$out/zoo_vae_pointwise.log"
fi
if want tf32; then
  few_out='^[0-9]+-[0-9]+-[0-9]+-([2-9]|[1-9][0-9]+)x[0-9]+-[1-8]-'
  for d in F B; do
    if [ "$d" = F ]; then solvers=ConvBlasKn2RowTf32Fwd,ConvBlasKn2RowFwd,ConvTritonImplicitGemmTf32Fwd,ConvTritonFmaFewKFwd
    else solvers=ConvBlasKn2RowTf32Bwd,ConvBlasKn2RowBwd,ConvTritonImplicitGemmTf32Bwd,ConvTritonFmaFewKBwd; fi
    timeout "$(( ${TF32_S:-100} / 2 + 5 ))" python3 bench/solver_alternatives.py --solvers "$solvers" \
      --types TF32 --directions "$d" --layouts NCHW,NHWC --batches 32 \
      --networks sd15_unet,sd15_vae,esrgan --only "$few_out" \
      --budget-s "$(( ${TF32_S:-100} / 2 - 10 ))" --out "$out/tf32_$d" > "$out/tf32_$d.log" 2>&1
    stamp "tf32 $d rc=$?"; tail -12 "$out/tf32_$d.log"
  done
fi
if want sample; then
  types="${SAMPLE_TYPES:-FP32}" every="${SAMPLE_EVERY:-4}"
  name="zoo_${types//,/_}_every$every"
  timeout "${SAMPLE_S:-400}" python3 bench/zoo.py --every "$every" --held-out \
    --types "$types" --batches 32 --budget-s "$(( ${SAMPLE_S:-400} - 45 ))" \
    --out "$out/$name" > "$out/$name.log" 2>&1
  stamp "sample rc=$?"; tail -30 "$out/$name.log"
fi
