#!/usr/bin/env bash
# On the GPU machine: the serving bench's first calls of two trees on one machine, in turn,
# ROUNDS rounds of FP32 and FP16 each (miopenkernels alone, no best-at-hand sweep), each tree
# against its own sm90-132 package; then one cProfile'd FP16 run of each (SERVING_PROFILE).
#
#   bash bench/gpu_serving_ab.sh OUTDIR BEFORE_TGZ
#
# BEFORE_TGZ: `git archive --format=tar.gz -o before.tgz REV`. This checkout is "after"; its
# package is reused from /tmp/sys-after when an earlier step on this machine built it.
set -uo pipefail
out="${1:?usage: bash bench/gpu_serving_ab.sh OUTDIR BEFORE_TGZ}"
tgz="${2:?usage: bash bench/gpu_serving_ab.sh OUTDIR BEFORE_TGZ}"
here="$(cd "$(dirname "$0")/.." && pwd)"
mkdir -p "$out" && out="$(cd "$out" && pwd)"
t0=$(date +%s)
stamp() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
source "$here/bench/_gpu_env.sh"
device_stamp "$out/device.txt"
[ -f /tmp/sys-after/sm9084.kdb ] || sm90_package /tmp/sys-after "$out/build_after"
cp -r /tmp/site /tmp/site-after
before=/tmp/tree-before
rm -rf "$before" /tmp/site && mkdir -p "$before" && tar xzf "$tgz" -C "$before" || exit 1
(cd "$before" && source "$here/bench/_gpu_env.sh" && sm90_package /tmp/sys-before "$out/build_before")
mv /tmp/site /tmp/site-before
stamp "packages ready"
run() {  # run TREE DTYPE NAME
  local dir="$here" site=/tmp/site-after
  [ "$1" = before ] && dir="$before" site=/tmp/site-before
  (cd "$dir" && PYTHONPATH="$site" PATH="$site/bin:$PATH" timeout 120 python3 bench/serving.py \
     --system-db "/tmp/sys-$1" --dtypes "$2" --engines miopenkernels --no-best \
     --out "$out/$3" > "$out/$3.log" 2>&1)
  stamp "$3 rc=$? $(grep -o '"first_call_median_ms": [0-9.]*' "$out/$3.json" | head -1)"
}
for round in $(seq "${ROUNDS:-3}"); do
  for tree in before after; do
    for dtype in FP32 FP16; do run "$tree" "$dtype" "serving_${tree}_${dtype}_r$round"; done
  done
done
for tree in before after; do
  SERVING_PROFILE="$out/profile_$tree" run "$tree" FP16 "serving_${tree}_FP16_profiled"
done
tar czf /tmp/serving_ab.tgz -C "$out" . && rm -rf "${out:?}"/* && mv /tmp/serving_ab.tgz "$out/"
