#!/usr/bin/env bash
# On the GPU machine: the GEMM-library 1x1 solvers (solvers/blas_1x1.py). Where cuBLAS is and
# its version, its GPU tests (tests/gpu/test_blas_gpu.py), then the sm90-132 package of the
# default manifests and bench/zoo.py over the zoo's 1x1 layers (`--pointwise`) with the
# arguments given. Output under OUTDIR: blas.txt, gpu_tests_blas.txt, the package's logs,
# zoo.json/.md and zoo.log; a summary line per step.
#
#   bash bench/gpu_blas.sh OUTDIR [zoo.py arguments...]   (ZOO_S: the zoo step's time limit;
#   NO_ZOO=1: the tests alone)
set -uo pipefail
out="${1:?usage: bash bench/gpu_blas.sh OUTDIR [zoo.py arguments...]}"
shift
here="$(dirname "$0")"
mkdir -p "$out"
t0=$(date +%s)
stamp() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
source "$here/_gpu_env.sh"
device_stamp "$out/device.txt"
# In a fresh process without torch: the library's load and a handle's creation, timed (what a
# first call that picks it pays once).
python3 - > "$out/blas.txt" 2>&1 <<'PY'
import time
t0 = time.perf_counter()
from miopenkernels.handle import Handle
h = Handle()
t1 = time.perf_counter()
from miopenkernels.backends import cublas
b = cublas.load()
t2 = time.perf_counter()
state = b.state(h.backend) if b is not None else None
t3 = time.perf_counter()
print("cuBLAS", None if b is None else (b.path, b.version))
print(f"handle {1e3 * (t1 - t0):.1f} ms, load {1e3 * (t2 - t1):.1f} ms, "
      f"cublasCreate {1e3 * (t3 - t2):.1f} ms")
PY
cat "$out/blas.txt"
timeout "${TESTS_S:-150}" python3 -m pytest -q -p no:cacheprovider tests/gpu/test_blas_gpu.py \
  -n 4 > "$out/gpu_tests_blas.txt" 2>&1
stamp "blas tests rc=$?"; tail -3 "$out/gpu_tests_blas.txt"
[ -n "${NO_ZOO:-}" ] && exit 0
sys=/tmp/sys
sm90_package "$sys" "$out"
export MIOPEN_SYSTEM_DB_PATH="$sys"
limit="${ZOO_S:-300}"
timeout "$limit" python3 bench/zoo.py --pointwise "$@" --budget-s "$(( limit - 30 ))" \
  --out "$out/zoo" > "$out/zoo.log" 2>&1
stamp "zoo rc=$?"; tail -30 "$out/zoo.log"
