#!/usr/bin/env bash
# On the GPU machine: the tensor-core (Triton) solvers' GPU tests. The test grid's Triton
# objects are compiled first on every core (Triton is installed there), then the grid runs with
# `import triton` blocked (MIOPENKERNELS_HIDE_TRITON=1), so every launch uses a precompiled
# object and its launch metadata alone; then the no-Triton child-process test. Output under
# OUTDIR (first argument). Run from the repository root.
set -uo pipefail
out="${1:?usage: bash bench/gpu_triton.sh OUTDIR}"
source "$(dirname "$0")/_gpu_env.sh"
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$out/device.txt"
python3 -c "import triton, cuda.bindings; print('triton', triton.__version__, \
'cuda-bindings', cuda.bindings.__version__)" >> "$out/device.txt"
date -u +%FT%TZ >> "$out/device.txt"
python3 - <<'PY' 2>&1 | tail -3 | tee "$out/precompile.txt"
import sys, time; sys.path.insert(0, "tests/gpu")
from pathlib import Path
import test_conv_correctness as tc
from miopenkernels.builder.precompile import precompile
from miopenkernels.solvers import get_solver
t = tc.SM90
jobs = set()
for p, s, q in tc.CASES:
    solver = get_solver(s)
    if solver.language == "triton":
        params = q if q is not None else tuple(solver.default_params(p, t))
        jobs.add(solver.compile_job(p, params, t, False))
t0 = time.time()
print("triton test jobs", precompile(list(jobs), Path("/tmp/mkcache/sm9084.ukdb"), 16),
      round(time.time() - t0, 1), "s")
PY
MIOPENKERNELS_TEST_KERNEL_CACHE="$MIOPEN_CUSTOM_CACHE_DIR" MIOPENKERNELS_HIDE_TRITON=1 timeout "${GRID_S:-300}" python3 -m pytest -q -p no:cacheprovider \
  tests/gpu/test_conv_correctness.py -k "Triton or covers" --maxfail=40 -n 8 \
  > "$out/grid.txt" 2>&1
tail -45 "$out/grid.txt" | tail -45 > "$out/grid_tail.txt"; tail -3 "$out/grid.txt"
MIOPEN_CUSTOM_CACHE_DIR= timeout 240 python3 -m pytest -q -p no:cacheprovider -s \
  tests/gpu/test_triton_runtime.py > "$out/runtime.txt" 2>&1
tail -3 "$out/runtime.txt"
