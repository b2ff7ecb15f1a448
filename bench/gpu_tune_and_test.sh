#!/usr/bin/env bash
# On the GPU machine, in one go: GPU tests, then tuning of the ResNet-50 batch-32 bench layers and of the
# resnet50 manifest, everything written under OUTDIR (first argument). Run from the repository root.
set -uo pipefail
out="${1:?usage: bash bench/gpu_tune_and_test.sh OUTDIR}"
source "$(dirname "$0")/_gpu_env.sh"
mkdir -p "$out/tune"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$out/device.txt"
python3 -c "import cuda.bindings, torch; print('cuda-bindings', cuda.bindings.__version__, \
'torch', torch.__version__, 'cuda', torch.version.cuda)" >> "$out/device.txt"
date -u +%FT%TZ >> "$out/device.txt"
# Compile the test grid's binaries on every core first.
python3 - <<'PY' 2>&1 | tail -2
import sys, time; sys.path.insert(0, "tests/gpu")
from pathlib import Path
import test_conv_correctness as tc
from miopenkernels.builder.precompile import precompile
from miopenkernels.solvers import get_solver, all_dynamic_jobs
from miopenkernels.primitives import all_primitive_jobs
t = tc.SM90
jobs = {get_solver(s).compile_job(p, q if q is not None else tuple(get_solver(s).default_params(p, t)), t, False) for p, s, q in tc.CASES}
jobs |= set(all_primitive_jobs(t))
t0 = time.time(); print("test jobs", precompile(list(jobs), Path("/tmp/mkcache/sm9084.ukdb")), round(time.time() - t0, 1), "s")
PY
timeout 170 python3 -m pytest -q -p no:cacheprovider tests/gpu --maxfail=30 2>&1 | tail -40 > "$out/gpu_tests.txt"
tail -3 "$out/gpu_tests.txt"
timeout 330 miopenkernels tune --manifest bench/resnet50_b32.txt --manifest resnet50 \
  --directions F --out "$out/tune" --time-limit "${TUNE_S:-240}" --per-solver 6 --candidates 24 \
  2>&1 | tail -15
ls -la "$out" "$out/tune"
