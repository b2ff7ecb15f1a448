#!/usr/bin/env bash
# On the GPU machine, in one go: build the sm90-132 package from the default manifests with the
# databases of dbs/sm9084 beside its kdb (checked closed by kdb verify), then the cold-start and
# serving benchmarks against it; results under OUTDIR (first argument), each step bounded.
#
#   [PROFILE=1] bash bench/gpu_serving.sh OUTDIR [NAME]     NAME: h100 (default) or h200;
#   PROFILE=1 adds a cProfile report of the first calls per type
set -uo pipefail
out="${1:?usage: bash bench/gpu_serving.sh OUTDIR [NAME]}"
name="${2:-h100}"
source "$(dirname "$0")/_gpu_env.sh"
sys=/tmp/sys
t0=$(date +%s)
stamp() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
sm90_package "$sys" "$out"
timeout 75 python3 bench/cold_start.py --system-db "$sys" --out "$out/cold_start_$name" \
  --cases installed,torch_cudnn_off,torch_cudnn_on --repeats 1 > "$out/cold_start.log" 2>&1
stamp "cold_start rc=$?"
for dtype in FP32 FP16; do
  timeout 185 python3 bench/serving.py --system-db "$sys" --dtypes "$dtype" \
    --out "$out/serving_${name}_$dtype" > "$out/serving_$dtype.log" 2>&1
  stamp "serving $dtype rc=$?"
done
python3 bench/serving.py --merge "$out/serving_${name}_FP32.json" "$out/serving_${name}_FP16.json" \
  --out "$out/serving_$name" > /dev/null 2>&1
stamp "merged rc=$?"
if [ "${PROFILE:-0}" = 1 ]; then  # where the first calls' host time goes (cProfile)
  for dtype in FP32 FP16; do
    MIOPEN_SYSTEM_DB_PATH="$sys" MIOPEN_USER_DB_PATH="$(mktemp -d)" \
      MIOPEN_CUSTOM_CACHE_DIR="$(mktemp -d)" SERVING_PROFILE="$out/profile" timeout 90 \
      python3 bench/serving.py --child miopenkernels --dtype "$dtype" --no-best > /dev/null
  done
  stamp "profiles rc=$?"
fi
# The machine returns few files: everything in one archive.
tar czf "$out/../results_$name.tgz" -C "$out" . && rm -rf "${out:?}"/* && mv "$out/../results_$name.tgz" "$out/"
