#!/usr/bin/env bash
# On the GPU machine: bench/solver_alternatives.py over the tiles the tile rules choose among
# (bench/tile_rule_fit.py fits them), each survey's results under OUTDIR (SURVEYS: which of
# small, few, usual, depthwise, dw_w, wrw, grouped_w, dw_taps; default small, few, usual,
# depthwise and wrw). The sm90-132 package of the default manifests is built first
# (bench/_gpu_env.sh `sm90_package`), so only the named tiles compile.
#
#   bash bench/gpu_tile_survey.sh OUTDIR
set -uo pipefail
out="${1:?usage: bash bench/gpu_tile_survey.sh OUTDIR}"
here="$(dirname "$0")"
mkdir -p "$out"
source "$here/_gpu_env.sh"
device_stamp "$out/device.txt"
if [ -z "${NO_PACKAGE:-}" ]; then  # NO_PACKAGE=1: no package; every object compiles on use
  sys=/tmp/sys
  sm90_package "$sys" "$out"
  export MIOPEN_SYSTEM_DB_PATH="$sys"
fi
surveys="${SURVEYS:-small few usual depthwise wrw}"
# Small layers: 1 to 20 pixels a side at batch 32, 10 or more channels, not grouped.
small='^[0-9]{2,}-.*-(1|7|8|10|13|14|16|17|19|20)-(1|7|8|10|13|14|16|17|19|20)-32-[^_]*$'
few='^[0-9]-'
depthwise='^([0-9]+)-.*_g\1$'
alt() {  # alt NAME SOLVER TILES DIRECTION LAYOUTS REGEX [EVERY]
  local name="$1" solver="$2" tiles="$3" dir="$4" layouts="$5" only="$6" every="${7:-1}" list
  list="$solver"
  for t in $tiles; do list="$list,$solver@$t"; done
  timeout "${ALT_S:-200}" python3 bench/solver_alternatives.py --solvers "$list" --types FP16 \
    --directions "$dir" --layouts "$layouts" --batches 32 --held-out --every "$every" \
    --only "$only" --budget-s "$(( ${ALT_S:-200} - 20 ))" --out "$out/$name" \
    > "$out/$name.log" 2>&1
  echo "$name rc=$? $(tail -1 "$out/$name.log")"
}
F=ConvTritonImplicitGemmFwd B=ConvTritonImplicitGemmBwd
small_tiles="64:32:64:8:4:3:1 64:64:64:8:4:3:1 128:64:64:8:4:3:1 64:128:64:8:4:3:1 \
128:128:64:8:4:3:1 64:64:64:8:4:3:2 64:32:64:8:4:3:2"
for s in $surveys; do
  case "$s" in
    small)
      alt small_F "$F" "$small_tiles" F NHWC,NCHW "$small" 2
      alt small_B "$B" "$small_tiles" B NHWC "$small" 2 ;;
    few)
      alt few "$F" "128:32:16:8:4:3:1 256:32:16:8:4:3:1 128:64:16:8:4:3:1 128:128:16:8:4:3:1 \
128:32:32:8:4:3:1 256:64:32:8:8:3:1 256:64:16:8:4:3:1 128:16:16:8:4:3:1 64:64:16:8:4:3:1" \
        F NHWC,NCHW "$few" ;;
    usual)  # each case's usual tile (kernels/conv_triton_tuned_sm90.json), unsplit and split
      alt usual_F_NHWC "$F" "128:128:64:8:8:3:1 128:128:64:8:8:3:2" F NHWC "$small" 2
      alt usual_F_NCHW "$F" "256:128:64:8:8:3:1 256:128:64:8:8:3:2" F NCHW "$small" 2
      alt usual_B "$B" "128:256:64:8:8:3:1 128:256:64:8:8:3:2" B NHWC "$small" 2
      alt usual_few_NHWC "$F" "256:64:32:8:8:3:1" F NHWC "$few"
      alt usual_few_NCHW "$F" "128:64:32:8:4:3:1" F NCHW "$few" ;;
    depthwise)
      alt dw_F_NHWC ConvTritonDepthwiseFwd "16:16:1:1:1:1 8:32:1:1:1:1 16:32:1:1:2:1 \
32:32:1:1:4:1 16:64:1:1:4:1 32:64:1:1:4:1 8:64:1:1:2:1" F NHWC "$depthwise"
      alt dw_B_NHWC ConvTritonDepthwiseBwd "8:16:1:1:1:1 8:32:1:1:1:1 16:32:1:1:2:1 \
32:32:1:1:4:1 8:64:1:1:2:1 32:64:1:1:8:1" B NHWC "$depthwise"
      alt dw_B_NCHW ConvTritonDepthwiseBwd "64:4:1:1:2:1 128:4:1:1:4:1 64:8:1:1:4:1 \
256:4:1:1:8:1 64:2:1:1:1:1" B NCHW "$depthwise" ;;
    dw_w)  # depthwise backward weights, each layout: output positions a step x channels,
           # warps (the default split)
      alt dw_W_NHWC ConvTritonDepthwiseWrw "32:32:1:1:4:1 64:16:1:1:4:1 32:32:1:1:8:1 \
8:64:1:1:4:1 16:64:1:1:8:1 128:8:1:1:4:1" W NHWC "$depthwise"
      alt dw_W_NCHW ConvTritonDepthwiseWrw "128:8:1:1:4:1 128:4:1:1:4:1 256:4:1:1:8:1 \
64:16:1:1:4:1 32:16:1:1:4:1 128:8:1:1:8:1" W NCHW "$depthwise" ;;
    wrw)  # backward weights NHWC, not few-channel or grouped, each tile at the split that
          # fills the GPU (a tile's seventh value 0)
      alt wrw_NHWC ConvTritonImplicitGemmWrw "64:64:64:8:4:4:0 128:128:64:8:8:3:0 \
128:64:64:8:4:3:0 64:128:64:8:4:3:0 128:128:32:8:4:3:0 64:64:32:8:4:3:0" W NHWC \
        '^[0-9]{2,}-[^_]*$' 4 ;;
    grouped_w)  # grouped (not depthwise) backward weights, both layouts: the packed kernel's
                # (fewer than 16 channels a group) and the implicit GEMM's (16 and more)
                # tiles, narrow ones included, at the filling split (0) and at 64 parts
      alt grouped_W ConvTritonImplicitGemmWrw "64:32:64:1:4:3:0 64:16:64:1:4:3:0 \
64:32:128:1:4:3:0 64:64:128:1:4:3:0 128:32:64:1:4:3:0 64:32:64:1:4:3:64 64:16:64:1:4:3:64" \
        W NHWC,NCHW '^(?!([0-9]+)-.*_g\1$).*_g[0-9]+$' ;;
    dw_taps)  # depthwise backward weights with every tap in one program, a trial kernel
              # (bench/depthwise_wrw_taps.py), against the shipped one and cuDNN
      timeout "${ALT_S:-200}" python3 bench/depthwise_wrw_taps.py --layouts NHWC,NCHW \
        --held-out --budget-s "$(( ${ALT_S:-200} - 20 ))" --out "$out/dw_taps" \
        > "$out/dw_taps.log" 2>&1
      echo "dw_taps rc=$? $(tail -2 "$out/dw_taps.log" | tr '\n' ' ')" ;;
  esac
done
