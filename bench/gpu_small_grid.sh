#!/usr/bin/env bash
# On the GPU machine: the small-grid forward rule end to end. Step "models": the sm90-132
# package of the default manifests (bench/_gpu_env.sh's sm90_package, into /tmp/sys) and
# bench/torch_models.py against it. Step "layers" (same machine, package kept in /tmp/sys):
# bench/torch_layers.py at batch 1, bench/serial_split.py at batch 8 (the rule's check there),
# and the torch and stream/graph GPU tests. Output under OUTDIR, a summary line per step.
#
#   bash bench/gpu_small_grid.sh models OUTDIR     (MODELS_S: torch_models.py's time limit)
#   bash bench/gpu_small_grid.sh layers OUTDIR
#   LAYERS=1 bash bench/gpu_small_grid.sh models OUTDIR   (then torch_layers.py alone)
#   GRID=Depthwise BATCHES=1 ...   (first the GPU grid's cases of a family; batch 1 alone)
set -uo pipefail
step="${1:?usage: bash bench/gpu_small_grid.sh models|layers OUTDIR}"
out="${2:?usage: bash bench/gpu_small_grid.sh models|layers OUTDIR}"
source "$(dirname "$0")/_gpu_env.sh"
mkdir -p "$out"
device_stamp "$out/device.txt"
sys=/tmp/sys
t0=$(date +%s)
stamp() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
if [ "$step" = models ]; then
  if [ -n "${GRID:-}" ]; then  # the GPU grid's cases of one family first (e.g. Depthwise)
    timeout "${GRID_S:-80}" python3 -m pytest -q -p no:cacheprovider -k "$GRID" \
      tests/gpu/test_conv_correctness.py > "$out/grid.txt" 2>&1
    stamp "GPU grid ($GRID) rc=$?"; tail -2 "$out/grid.txt"
  fi
  sm90_package "$sys" "$out/build"
  export MIOPEN_SYSTEM_DB_PATH="$sys"
  timeout "${MODELS_S:-300}" python3 bench/torch_models.py --out "$out/torch_op.json" \
    --repeats "${REPEATS:-20}" --timeout "${CASE_S:-60}" --batches "${BATCHES:-1,32}" \
    > "$out/torch_models.txt" 2>&1
  stamp "torch models rc=$?"; tail -22 "$out/torch_models.txt"
  [ -n "${LAYERS:-}" ] && step=layers-after-models
fi
if [ "$step" != models ]; then
  export MIOPEN_SYSTEM_DB_PATH="$sys"
  timeout 200 python3 bench/torch_layers.py --out "$out/torch_layers" \
    --cases "resnet50,1,FP16,channels_last;resnet50,1,FP32,contiguous;mobilenet_v2,1,FP16,contiguous;mobilenet_v2,1,FP32,channels_last" \
    > "$out/torch_layers.txt" 2>&1
  stamp "torch layers rc=$?"; grep -E "conv|geomean" "$out/torch_layers.txt" | tail -8
  [ "$step" = layers-after-models ] && exit 0
  timeout 150 python3 bench/serial_split.py --batch 8 --no-serial --samples 9 --inner 10 \
    --cases FP16-NHWC,FP16-NCHW,TF32-NCHW,TF32-NHWC --out "$out/serial_split_b8_h100" \
    > "$out/serial_split_b8.txt" 2>&1
  stamp "batch-8 timings rc=$?"; tail -4 "$out/serial_split_b8.txt"
  timeout 200 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_torch_gpu.py \
    tests/gpu/test_streams_graphs.py > "$out/torch_tests.txt" 2>&1
  stamp "torch and stream/graph GPU tests rc=$?"; tail -3 "$out/torch_tests.txt"
fi
