#!/usr/bin/env bash
# On the GPU machine: the sm90-132 package of the default manifests (bench/_gpu_env.sh
# `sm90_package`), then bench/zoo.py against it with the arguments given (each sampled layer
# against cuDNN). Output under OUTDIR: the package's logs, zoo.json/.md and zoo.log; a summary
# line per step.
#
#   bash bench/gpu_zoo.sh OUTDIR [zoo.py arguments...]   (ZOO_S: the zoo step's time limit)
set -uo pipefail
out="${1:?usage: bash bench/gpu_zoo.sh OUTDIR [zoo.py arguments...]}"
shift
here="$(dirname "$0")"
mkdir -p "$out"
t0=$(date +%s)
stamp() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
source "$here/_gpu_env.sh"
sys=/tmp/sys
sm90_package "$sys" "$out"
export MIOPEN_SYSTEM_DB_PATH="$sys"
limit="${ZOO_S:-300}"
timeout "$limit" python3 bench/zoo.py "$@" --budget-s "$(( limit - 30 ))" --out "$out/zoo" \
  > "$out/zoo.log" 2>&1
stamp "zoo rc=$?"; tail -30 "$out/zoo.log"
