#!/usr/bin/env bash
# On the GPU machine, one call (no package needed): the warp-specialised trial kernels
# (bench/_ws_kernel.py) against cuDNN, the shipped pointer-gather kernel and cuBLAS.
#   ws_f.*   FP16 forward NHWC, every third zoo layer the kernel runs (held-out networks
#            apart), the GEMM ceilings too (--gemm);  WS_F_S
#   ws_b.*   FP16 backward data NHWC on the same layers;  WS_B_S
#   ws_w.*   FP16 backward weights NHWC on the same layers (the copies and the parts' sum in
#            its time);  WS_W_S
# A summary line per step; results (.json, .md, .log) under OUTDIR. STEPS names the steps
# (default f,b,w: under 600 s in all).
#
#   bash bench/gpu_ws.sh OUTDIR
set -uo pipefail
out="${1:?usage: bash bench/gpu_ws.sh OUTDIR}"
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
steps="${STEPS:-f,b,w}"
want() { [[ ",$steps," == *",$1,"* ]]; }
if want f; then run ws_f "${WS_F_S:-220}" --directions F --gemm; fi
if want b; then run ws_b "${WS_B_S:-140}" --directions B; fi
if want w; then run ws_w "${WS_W_S:-150}" --directions W; fi
