#!/usr/bin/env bash
# On the GPU machine, no package (objects compile on first use, outside the timings): the
# few-channel forward's channels-last objects that assume y's side aligned
# (conv_triton_kernels_spec.FEW_ALIGN_ARGS), against the generic ones. Steps (STEPS, default
# all, in this order):
#   tests   the GPU grid's few-channel 2-D forward problems in NHWC against float64 (TESTS_K:
#           another selection of solvers, e.g. "(ImplicitGemmBwd or ImplicitGemmWrw)"; TESTS_P:
#           of problems, by their FindDb keys, which backward ones spell K first:
#           "(16-10-10-7x7-3-20-20 or 32-17-16-3x3-3-17-16)")
#   survey  bench/solver_alternatives.py: the zoo's few-channel FP16 forward layers in NHWC at
#           the few-channel survey's nine tiles (the aligned objects where they apply)
#   before  bench/zoo.py, find's pick against cuDNN over the few-channel class, FP16 and BF16
#           forward NHWC (ZOO_DIRS: other directions, e.g. B,W) at batch 32 (held-out networks apart), the generic objects alone
#           (FEW_ALIGN_ARGS emptied in the process) and the tile rule as committed
#   fit     bench/tile_rule_fit.py over the committed surveys with this survey --fresh, written
#           into the checkout's tuned table (copied to OUTDIR) and installed again
#   after   the zoo step again: the aligned objects and the refitted rule
#   bw      bench/solver_alternatives.py over the zoo's few-channel FP16 backward data and
#           weights layers in NHWC (1-9 channels on x's side; a backward key spells K first): immediate mode's first choice (`pick`), the few-channel
#           3-D kernels' 2-D solvers and the implicit GEMM (its objects aligned on dy's side
#           where the kernels' FEW_ALIGN_ARGS name them)
#
#   bash bench/gpu_fewc_aligned.sh OUTDIR
set -uo pipefail
out="${1:?usage: bash bench/gpu_fewc_aligned.sh OUTDIR}"
here="$(dirname "$0")"
mkdir -p "$out"
t0=$(date +%s)
stamp() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
source "$here/_gpu_env.sh"
device_stamp "$out/device.txt"
steps=" ${STEPS:-tests survey before fit after bw} "
want() { [[ "$steps" == *" $1 "* ]]; }
zoo_args=(--types FP16,BF16 --directions "${ZOO_DIRS:-F}" --layouts NHWC --classes few-channel
          --batches 32 --held-out)
if want tests; then
  timeout "${TESTS_S:-110}" python3 -m pytest -q -p no:cacheprovider \
    tests/gpu/test_conv_correctness.py \
    -k "${TESTS_K:-(ImplicitGemmFwd or SmallCFwd)} and NHWC and ${TESTS_P:-(3-20-20-7x7 or 3-17-16-3x3)}" \
    > "$out/gpu_tests.txt" 2>&1
  stamp "tests rc=$? $(tail -1 "$out/gpu_tests.txt")"
fi
if want survey; then
  F=ConvTritonImplicitGemmFwd list=ConvTritonImplicitGemmFwd
  for t in 128:32:16:8:4:3:1 256:32:16:8:4:3:1 128:64:16:8:4:3:1 128:128:16:8:4:3:1 \
           128:32:32:8:4:3:1 256:64:32:8:8:3:1 256:64:16:8:4:3:1 128:16:16:8:4:3:1 \
           64:64:16:8:4:3:1; do list="$list,$F@$t"; done
  timeout "${SURVEY_S:-150}" python3 bench/solver_alternatives.py --solvers "$list" \
    --types FP16 --directions F --layouts NHWC --batches 32 --held-out --only '^[0-9]-' \
    --budget-s "$(( ${SURVEY_S:-150} - 15 ))" --out "$out/tile_survey_few_nhwc_aligned_h100" \
    > "$out/survey.log" 2>&1
  stamp "survey rc=$? $(tail -1 "$out/survey.log")"
fi
if want before; then
  timeout "${ZOO_S:-130}" python3 -c "
import runpy, sys
from miopenkernels.kernels import conv_triton_kernels_spec as spec
spec.FEW_ALIGN_ARGS.clear()  # the generic objects alone, as before they were shipped
sys.argv = ['bench/zoo.py', *sys.argv[1:]]
runpy.run_path('bench/zoo.py', run_name='__main__')" "${zoo_args[@]}" \
    --budget-s "$(( ${ZOO_S:-130} - 15 ))" --out "$out/zoo_before" > "$out/zoo_before.log" 2>&1
  stamp "before rc=$?"; tail -12 "$out/zoo_before.log"
fi
if want fit; then
  mapfile -t surveys < <(ls bench/results/tile_survey_*_h200.json | grep -v _dw_)
  python3 bench/tile_rule_fit.py "${surveys[@]}" --least 12 \
    --fresh "$out/tile_survey_few_nhwc_aligned_h100.json" \
    --write kernels/conv_triton_tuned_sm90.json --out "$out/tile_rule_fit" > "$out/fit.log" 2>&1
  stamp "fit rc=$? $(tail -3 "$out/fit.log" | tr '\n' ' ')"
  cp kernels/conv_triton_tuned_sm90.json "$out/"
  source "$here/_gpu_env.sh"  # the refitted table installed
fi
if want after; then
  timeout "${ZOO_S:-130}" python3 bench/zoo.py "${zoo_args[@]}" \
    --budget-s "$(( ${ZOO_S:-130} - 15 ))" --out "$out/zoo_after" > "$out/zoo_after.log" 2>&1
  stamp "after rc=$?"; tail -12 "$out/zoo_after.log"
fi
if want bw; then
  timeout "${BW_S:-200}" python3 bench/solver_alternatives.py \
    --solvers "pick,ConvTritonSmallCBwd,ConvTritonImplicitGemmBwd,ConvTritonSmallCWrw,\
ConvTritonImplicitGemmWrw" --types FP16 --directions B,W --layouts NHWC --batches 32 \
    --held-out --only '^[0-9]+-[0-9]+-[0-9]+-[0-9]+x[0-9]+-[0-9]-' \
    --budget-s "$(( ${BW_S:-200} - 15 ))" --out "$out/bw" \
    > "$out/bw.log" 2>&1
  stamp "bw rc=$? $(tail -1 "$out/bw.log")"; tail -30 "$out/bw.log"
fi
tar -czf "$out.tar.gz" -C "$(dirname "$out")" "$(basename "$out")" && stamp "results: $out.tar.gz"
