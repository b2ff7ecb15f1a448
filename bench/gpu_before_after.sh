#!/usr/bin/env bash
# On the GPU machine: one tree's kernels bench (the 23 ResNet-50 layers at batch 32, every type,
# direction and layout) and serving bench (FP32 and FP16), each against that tree's own sm90-132
# package, so that two trees can be compared on one warm machine, one call each.
#
#   bash bench/gpu_before_after.sh OUTDIR NAME [TREE_TGZ]
#
# Without TREE_TGZ: this checkout. With it: an archive of an earlier tree
# (`git archive --format=tar.gz -o before.tgz REV`), unpacked into /tmp/tree-NAME and run from
# there with its own bench/kernels.py, bench/serving.py, manifests and databases. Each tree gets
# its own site folder, system folder and user databases.
set -uo pipefail
out="${1:?usage: bash bench/gpu_before_after.sh OUTDIR NAME [TREE_TGZ]}"
name="${2:?usage: bash bench/gpu_before_after.sh OUTDIR NAME [TREE_TGZ]}"
tgz="${3:-}"
here="$(cd "$(dirname "$0")/.." && pwd)"
mkdir -p "$out" && out="$(cd "$out" && pwd)"
tree="$here"
if [ -n "$tgz" ]; then
  tree="/tmp/tree-$name"
  rm -rf "$tree" && mkdir -p "$tree" && tar xzf "$tgz" -C "$tree" || exit 1
fi
cd "$tree" || exit 1
rm -rf /tmp/site
export MIOPEN_SYSTEM_DB_PATH="/tmp/nosys-$name" MIOPEN_USER_DB_PATH="/tmp/mkuser-$name" \
       MIOPEN_CUSTOM_CACHE_DIR="/tmp/mkcache-$name"
source "$here/bench/_gpu_env.sh"
device_stamp "$out/device_$name.txt"
sys="/tmp/sys-$name"
t0=$(date +%s)
stamp() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
sm90_package "$sys" "$out/build_$name"
MIOPEN_SYSTEM_DB_PATH="$sys" MIOPEN_USER_DB_PATH="$(mktemp -d)" \
  MIOPEN_CUSTOM_CACHE_DIR="$(mktemp -d)" timeout 150 \
  python3 bench/kernels.py --batches 32 --out "$out/kernels_$name" > "$out/kernels_$name.log" 2>&1
stamp "kernels rc=$?"
for dtype in FP32 FP16; do
  timeout 170 python3 bench/serving.py --system-db "$sys" --dtypes "$dtype" \
    --out "$out/serving_${name}_$dtype" > "$out/serving_${name}_$dtype.log" 2>&1
  stamp "serving $dtype rc=$?"
done
python3 bench/serving.py --merge "$out/serving_${name}_FP32.json" "$out/serving_${name}_FP16.json" \
  --out "$out/serving_$name" > /dev/null 2>&1
stamp "merged rc=$?"
tail -5 "$out/kernels_$name.log"
# The machine returns few files: everything in one archive.
tar czf "/tmp/results_$name.tgz" -C "$out" . && rm -rf "${out:?}"/* && mv "/tmp/results_$name.tgz" "$out/"
