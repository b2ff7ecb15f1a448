#!/usr/bin/env bash
# On the GPU machine, no package (objects compile on first use, outside the timings): the
# pointwise row GEMMs (solvers/triton_pointwise.py) on 1x1 and 1x1x1 channels-last layers with
# at most 16 channels on one side. Steps (STEPS, default all, in this order):
#   tests   the GPU grid's problems these solvers take, every direction and type, against
#           float64 (default, first legal and split parameters)
#   alt     bench/solver_alternatives.py over the zoo's (and held-out networks') such layers
#           (ALT_ONLY, a regex on their FindDb keys, narrows them), ALT_TYPES (default FP16,
#           BF16 and FP32), ALT_DIRECTIONS (default all), channels-last (3-D layers NDHWC), at
#           ALT_BATCHES (default 32): immediate mode's first choice (`pick`) against these
#           solvers, each against cuDNN (problems of at most MAX_GB, default 6, GB of tensors)
#   fit     bench/pointwise_first.py over the alt step's run (and FIT_RUNS, earlier runs): the
#           claims (fit.json's `first`)
#   zoo     bench/zoo.py with the fit's claims in the process: find's pick against cuDNN over
#           the zoo's pointwise layers of at most 16 channels on one side (and the held-out
#           networks'), ZOO_TYPES (default FP16,BF16,FP32), ZOO_DIRECTIONS (default all),
#           ZOO_LAYOUTS (default NHWC: channels-last), ZOO_BATCHES (default 32), ZOO_NETWORKS
#           (default the zoo's every network)
#
#   bash bench/gpu_pointwise.sh OUTDIR
set -uo pipefail
out="${1:?usage: bash bench/gpu_pointwise.sh OUTDIR}"
here="$(dirname "$0")"
mkdir -p "$out"
t0=$(date +%s)
stamp() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
source "$here/_gpu_env.sh"
device_stamp "$out/device.txt"
steps=" ${STEPS:-tests alt fit zoo} "
want() { [[ "$steps" == *" $1 "* ]]; }
# A 1x1 (1x1x1) layer with at most 16 channels on either side, by its FindDb key.
narrow='(^([0-9]|1[0-6])-.*-1x1(x1)?-|-1x1(x1)?-([0-9]|1[0-6])-)'
if want tests; then
  timeout "${TESTS_S:-150}" python3 -m pytest -q -p no:cacheprovider \
    tests/gpu/test_conv_correctness.py -k "Pointwise" > "$out/gpu_tests.txt" 2>&1
  stamp "tests rc=$? $(tail -1 "$out/gpu_tests.txt")"
fi
if want alt; then
  timeout "${ALT_S:-330}" python3 bench/solver_alternatives.py \
    --solvers pick,ConvTritonPointwiseFwd,ConvTritonPointwiseBwd,ConvTritonPointwiseWrw \
    --types "${ALT_TYPES:-FP16,BF16,FP32}" --directions "${ALT_DIRECTIONS:-F,B,W}" \
    --layouts NHWC --batches "${ALT_BATCHES:-32}" \
    --held-out --only "${ALT_ONLY:-$narrow}" --require ConvTritonPointwise --max-gb "${MAX_GB:-6}" \
    --budget-s "$(( ${ALT_S:-330} - 15 ))" --out "$out/alt" > "$out/alt.log" 2>&1
  stamp "alt rc=$? $(tail -1 "$out/alt.log")"; tail -40 "$out/alt.log"
fi
if want fit; then
  python3 bench/pointwise_first.py "$out/alt.json" ${FIT_RUNS:-} --out "$out/fit" \
    > "$out/fit.log" 2>&1
  stamp "fit rc=$?"; cat "$out/fit.log"
fi
if want zoo; then
  timeout "${ZOO_S:-200}" python3 -c "
import json, runpy, sys
from miopenkernels.kernels import conv_triton_pointwise_spec as spec
spec.FIRST.update(json.load(open(sys.argv[1]))['first'])  # the fit's claims
sys.argv = ['bench/zoo.py', *sys.argv[2:]]
runpy.run_path('bench/zoo.py', run_name='__main__')" "$out/fit.json" \
    --types "${ZOO_TYPES:-FP16,BF16,FP32}" --directions "${ZOO_DIRECTIONS:-F,B,W}" \
    --layouts "${ZOO_LAYOUTS:-NHWC}" --pointwise ${ZOO_NETWORKS:+--networks "$ZOO_NETWORKS"} \
    --most-channels 16 --batches "${ZOO_BATCHES:-32}" --held-out --max-gb "${MAX_GB:-6}" \
    --budget-s "$(( ${ZOO_S:-200} - 15 ))" \
    --out "$out/zoo" > "$out/zoo.log" 2>&1
  stamp "zoo rc=$?"; tail -30 "$out/zoo.log"
fi
tar -czf "$out.tar.gz" -C "$(dirname "$out")" "$(basename "$out")" && stamp "results: $out.tar.gz"
