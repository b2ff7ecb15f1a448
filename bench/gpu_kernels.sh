#!/usr/bin/env bash
# On the GPU machine: the sm90-132 package built from the default manifests with the databases
# of dbs/sm9084 (a no-op rebuild on a warm machine), then bench/kernels.py
# against it; results under OUTDIR. Arguments after NAME go to bench/kernels.py (e.g.
# `--types FP16,BF16 --batches 32 --budget-s 400`).
#
#   bash bench/gpu_kernels.sh OUTDIR [NAME [kernels.py arguments...]]     NAME: h100 (default)
set -uo pipefail
out="${1:?usage: bash bench/gpu_kernels.sh OUTDIR [NAME [kernels.py arguments...]]}"
name="${2:-h100}"
shift $(( $# < 2 ? $# : 2 ))
source "$(dirname "$0")/_gpu_env.sh"
sys=/tmp/sys
t0=$(date +%s)
stamp() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
sm90_package "$sys" "$out"
MIOPEN_SYSTEM_DB_PATH="$sys" MIOPEN_USER_DB_PATH="$(mktemp -d)" \
  MIOPEN_CUSTOM_CACHE_DIR="$(mktemp -d)" \
  python3 bench/kernels.py --out "$out/kernels_$name" "$@" > "$out/kernels.log" 2>&1
stamp "kernels rc=$?"
tail -40 "$out/kernels.log"
