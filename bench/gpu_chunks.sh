#!/usr/bin/env bash
# On the GPU machine: the batch-chunk solvers (layers past 32-bit offsets, 2-D and 3-D) against
# torch, every direction, both layouts (tests/gpu/test_chunks_gpu.py), their objects compiled on
# first use (no package: Triton visible), one process (each case holds some 15-50 GB of
# tensors). Output under OUTDIR; a summary line.
#
#   bash bench/gpu_chunks.sh OUTDIR   (TESTS_S: the tests' time limit, default 540 s, under
#                                      the device machine's 600 s a command; CHUNKS_K: a
#                                      pytest -k expression, e.g. 3d)
set -uo pipefail
out="${1:?usage: bash bench/gpu_chunks.sh OUTDIR}"
source "$(dirname "$0")/_gpu_env.sh"
mkdir -p "$out"
device_stamp "$out/device.txt" > /dev/null
timeout "${TESTS_S:-540}" python3 -m pytest -q -p no:cacheprovider tests/gpu/test_chunks_gpu.py \
  ${CHUNKS_K:+-k "$CHUNKS_K"} > "$out/chunks.txt" 2>&1
echo "chunk solvers against torch: rc=$?"; tail -4 "$out/chunks.txt"
