#!/usr/bin/env bash
# On the GPU machine: the hot path's GPU tests (streams, torch.cuda.graph and Handle.capture,
# the CUDA backend, find, the Triton runtime) and bench/host_cost.py. Output under OUTDIR (first
# argument): device.txt, host_cost.json (commit it as bench/results/host_cost_<h100|h200>.json)
# and the tests' logs; a summary line per step on stdout. Run from the repository root.
set -uo pipefail
out="${1:?usage: bash bench/gpu_hotpath.sh OUTDIR}"
source "$(dirname "$0")/_gpu_env.sh"
mkdir -p "$out"
device_stamp "$out/device.txt"
timeout "${BENCH_S:-120}" python3 bench/host_cost.py --out "$out/host_cost.json" \
  > "$out/host_cost.txt" 2>&1
echo "host cost: rc=$?"; tail -8 "$out/host_cost.txt"
timeout "${TESTS_S:-150}" python3 -m pytest -q -p no:cacheprovider tests/gpu/test_streams_graphs.py \
  tests/gpu/test_backend_cuda.py tests/gpu/test_find_gpu.py tests/gpu/test_triton_runtime.py \
  > "$out/gpu_hotpath_tests.txt" 2>&1
echo "streams, graphs, backend, find, Triton runtime: rc=$?"; tail -5 "$out/gpu_hotpath_tests.txt"
