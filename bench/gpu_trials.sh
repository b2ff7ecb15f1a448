#!/usr/bin/env bash
# On the GPU machine, no package needed: trial kernels that no solver runs yet, timed against
# cuDNN and what ships, to decide whether they become solvers.
#   ws_f.*     bench/ws_conv.py: the warp-specialised shift kernel (bench/_ws_kernel.py),
#              FP16 forward NHWC, every third zoo layer it runs (held-out networks apart),
#              with the GEMM ceilings (cuBLAS, gemm_ws);  WS_F_S
#   ws_b.*     the same, backward data;  WS_B_S
#   ws_w.*     the same, backward weights (the copies and the parts' sum in its time);  WS_W_S
#   fewc16.*   bench/fewc_fwd_2d.py: the few-channel forward stems, FP16, the shipped kernel
#              in both layouts against y stored by TMA (nhwc_tma) and the direct kernel on the
#              FP32 units (nhwc_fma, nchw_fma);  FEWC_S
#   fewc32.*   the same in FP32 against IEEE cuDNN (TF32 off);  FEWC_S
# A summary line per step; results (.json, .md, .log) under OUTDIR. STEPS names the steps
# (default all); two calls of under 600 s each:
#
#   STEPS=f,b,w bash bench/gpu_trials.sh OUTDIR
#   STEPS=fewc16,fewc32 bash bench/gpu_trials.sh OUTDIR
set -uo pipefail
out="${1:?usage: [STEPS=...] bash bench/gpu_trials.sh OUTDIR}"
here="$(dirname "$0")"
mkdir -p "$out"
t0=$(date +%s)
stamp() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
source "$here/_gpu_env.sh"
device_stamp "$out/device.txt" > /dev/null
run() {  # run NAME LIMIT ws_conv.py-arguments...
  local name="$1" limit="$2"; shift 2
  timeout "$limit" python3 bench/ws_conv.py "$@" --types FP16 --every 3 --held-out \
    --budget-s "$(( limit - 30 ))" --out "$out/$name" > "$out/$name.log" 2>&1
  stamp "$name rc=$? $(grep -E 'best|gather \||cublas' "$out/$name.md" 2>/dev/null \
    | tr -s ' ' | tr '\n' ';' | cut -c1-400)"
}
steps="${STEPS:-f,b,w,fewc16,fewc32}"
want() { [[ ",$steps," == *",$1,"* ]]; }
if want f; then run ws_f "${WS_F_S:-220}" --directions F --gemm; fi
if want b; then run ws_b "${WS_B_S:-140}" --directions B; fi
if want w; then run ws_w "${WS_W_S:-150}" --directions W; fi
fewc() {  # fewc NAME DTYPE
  timeout "${FEWC_S:-140}" python3 bench/fewc_fwd_2d.py --dtype "$2" --tiles 0,1,3,5,10,11 \
    --variants nchw,nhwc_cl1,nhwc_tma,nhwc_fma,nchw_fma --out "$out/$1" > "$out/$1.log" 2>&1
  stamp "$1 rc=$? $(grep -c cudnn "$out/$1.log") stems"
}
if want fewc16; then fewc fewc16 fp16; fi
if want fewc32; then fewc fewc32 fp32; fi
