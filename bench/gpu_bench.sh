#!/usr/bin/env bash
# On the GPU machine, in one go: build the sm90-132 package databases (kdb from the builder, FindDb/PerfDb
# from dbs/sm9084), then the cold-start and per-layer benchmarks, results under OUTDIR (first argument).
set -uo pipefail
out="${1:?usage: bash bench/gpu_bench.sh OUTDIR}"
export PYTHONUNBUFFERED=1
python3 -m pip install -q --upgrade --no-deps --no-build-isolation --target /tmp/site . >/dev/null 2>&1
export PYTHONPATH=/tmp/site PATH=/tmp/site/bin:$PATH
mkdir -p /tmp/sys "$out"
t0=$(date +%s)
miopenkernels build --targets sm90-132 --manifest bench/resnet50_b32.txt --out /tmp/sys -j 16 \
  --json > "$out/build.json" 2> "$out/build.err"; echo "build rc=$? $(( $(date +%s) - t0 )) s"
tail -3 "$out/build.err"
cp dbs/sm9084/sm9084.HIP.fdb.txt dbs/sm9084/sm9084.db.txt /tmp/sys/
ls -la /tmp/sys
timeout 330 python3 bench/cold_start.py --system-db /tmp/sys --out "$out/cold_start_h100" \
  --repeats "${REPEATS:-2}"
MIOPEN_SYSTEM_DB_PATH=/tmp/sys MIOPEN_USER_DB_PATH=/tmp/kuser MIOPEN_CUSTOM_CACHE_DIR=/tmp/kcache \
  timeout 180 python3 bench/kernels.py --out "$out/kernels_h100" 2>&1 | tail -12
