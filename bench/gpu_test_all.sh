#!/usr/bin/env bash
# On the GPU machine: every GPU test (portable and tensor-core solvers, primitives, find, the
# CUDA backend, launches with Triton hidden). The test grid's objects are compiled first on every
# core, then the tests run in 8 processes. Output under OUTDIR (first argument); a summary line
# per step on stdout. Run from the repository root. GRID_SOLVER=<prefix>[,<prefix>...] (e.g.
# ConvTriton3d) keeps the grid to the solvers whose names start with one of them and skips the
# other GPU tests; GRID_K=<expression> narrows them further (pytest -k, ANDed: e.g. '3x1x1 or
# Fma' for the cases whose ids hold either).
set -uo pipefail
out="${1:?usage: bash bench/gpu_test_all.sh OUTDIR}"
source "$(dirname "$0")/_gpu_env.sh"
mkdir -p "$out"
device_stamp "$out/device.txt"
python3 - <<'PY' 2>&1 | tail -3 | tee "$out/precompile.txt"
import os, sys, time; sys.path.insert(0, "tests/gpu")
from pathlib import Path
import test_conv_correctness as tc
from miopenkernels.builder.precompile import precompile
from miopenkernels.primitives import all_primitive_jobs
from miopenkernels.solvers import get_solver, launch_jobs, with_companions
t = tc.SM90
only = tuple(os.environ.get("GRID_SOLVER", "").split(","))
jobs = set() if any(only) else set(all_primitive_jobs(t))
for p, s, q in (c for c in tc.CASES if c[1].startswith(only)):
    solver = get_solver(s)
    params = q if q is not None else tuple(solver.default_params(p, t))
    jobs.update(launch_jobs(solver, p, params, t))
t0 = time.time()
print("test-grid jobs", precompile(with_companions(jobs), Path("/tmp/mkcache/sm9084.ukdb"), 16),
      round(time.time() - t0, 1), "s")
PY
# The solver grid and the primitives run with `import triton` blocked, so every Triton launch
# uses a precompiled object; the tests that import torch (whose CUDA start-up imports triton) and
# the no-Triton child-process test run with Triton visible.
export MIOPENKERNELS_TEST_KERNEL_CACHE="$MIOPEN_CUSTOM_CACHE_DIR"
if [ -n "${GRID_SOLVER:-}" ]; then
  MIOPENKERNELS_HIDE_TRITON=1 timeout "${TESTS_S:-330}" python3 -m pytest -q \
    -p no:cacheprovider tests/gpu/test_conv_correctness.py \
    -k "(${GRID_SOLVER//,/ or })${GRID_K:+ and ($GRID_K)}" -n 8 \
    --maxfail=150 > "$out/gpu_tests.txt" 2>&1
  echo "grid of $GRID_SOLVER*, Triton hidden: rc=$?"; tail -5 "$out/gpu_tests.txt"
  exit 0
fi
MIOPENKERNELS_HIDE_TRITON=1 timeout "${TESTS_S:-330}" python3 -m pytest -q -p no:cacheprovider \
  tests/gpu/test_conv_correctness.py tests/gpu/test_primitives.py -n 8 --maxfail=150 \
  > "$out/gpu_tests.txt" 2>&1
echo "grid and primitives, Triton hidden: rc=$?"; tail -5 "$out/gpu_tests.txt"
timeout 150 python3 -m pytest -q -p no:cacheprovider tests/gpu \
  --ignore=tests/gpu/test_conv_correctness.py --ignore=tests/gpu/test_primitives.py \
  > "$out/gpu_tests_torch.txt" 2>&1
echo "backend, find, torch/CuPy and no-Triton child: rc=$?"; tail -5 "$out/gpu_tests_torch.txt"
