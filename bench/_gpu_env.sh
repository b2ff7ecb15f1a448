# Sourced by the bench/gpu_*.sh scripts: the project installed from this checkout into
# /tmp/site (the GPU machine has its Python packages but not this project), unbuffered output,
# and user/system database locations of their own so runs do not see each other's files.
export PYTHONUNBUFFERED=1
python3 -m pip install -q --upgrade --no-deps --no-build-isolation --target /tmp/site . \
  >/tmp/site-install.log 2>&1
export PYTHONPATH=/tmp/site PATH=/tmp/site/bin:$PATH
if ! python3 -c "import miopenkernels.builder, miopenkernels.kernels" 2>/dev/null; then
    # The machine's setuptools may be older than the project's metadata needs: map the folders
    # onto the import package with links instead (as ci/typecheck.sh does) and make the CLI.
    echo "install failed ($(tail -1 /tmp/site-install.log)); using a link tree" >&2
    rm -rf /tmp/site && mkdir -p /tmp/site/miopenkernels /tmp/site/bin
    for entry in library/*; do ln -s "$PWD/$entry" "/tmp/site/miopenkernels/${entry#library/}"; done
    for d in builder kernels dbs recipes; do ln -s "$PWD/$d" "/tmp/site/miopenkernels/$d"; done
    printf '#!/usr/bin/env python3\nfrom miopenkernels.cli import main\nmain()\n' \
      > /tmp/site/bin/miopenkernels && chmod +x /tmp/site/bin/miopenkernels
fi
export MIOPEN_SYSTEM_DB_PATH="${MIOPEN_SYSTEM_DB_PATH:-/tmp/nosys}" \
       MIOPEN_USER_DB_PATH="${MIOPEN_USER_DB_PATH:-/tmp/mkuser}" \
       MIOPEN_CUSTOM_CACHE_DIR="${MIOPEN_CUSTOM_CACHE_DIR:-/tmp/mkcache}"
mkdir -p "$MIOPEN_SYSTEM_DB_PATH"

# device_stamp FILE: the GPU and driver, the cuda-bindings, torch, CUDA and Triton versions and
# the UTC time into FILE (the test and bench scripts' device.txt), then print it.
device_stamp() {
  { nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
    python3 -c "import cuda.bindings, torch, triton; print('cuda-bindings', \
cuda.bindings.__version__, 'torch', torch.__version__, 'cuda', torch.version.cuda, 'triton', \
triton.__version__)"
    date -u +%FT%TZ; } > "$1" 2>&1
  cat "$1"
}

# tune_stamp FILE [LINE...]: the GPU, driver, cuda-bindings and Triton versions, the given lines
# and the UTC time into FILE (the tuning scripts' device.txt), then print it.
tune_stamp() {
  local file="$1"; shift
  { nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
    python3 -c "import cuda.bindings, triton; print('cuda-bindings', cuda.bindings.__version__, \
'triton', triton.__version__)"
    if [ $# -gt 0 ]; then printf '%s\n' "$@"; fi
    date -u +%FT%TZ; } > "$file" 2>&1
  cat "$file"
}

# sm90_package DIR OUTDIR: the sm90-132 package of the default manifests in DIR, with the
# databases of dbs/sm9084 beside its kdb, checked closed by `kdb verify` (a warm machine's
# earlier build makes this a no-op rebuild; BUILD_S, default 150, limits a cold one); logs and a
# timed line per step under OUTDIR.
sm90_package() {
  local sys="$1" out="$2" t0 rc
  t0=$(date +%s)
  mkdir -p "$sys" "$out"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > "$out/device.txt"
  timeout "${BUILD_S:-150}" miopenkernels build --targets sm90-132 --out "$sys" -j "$(nproc)" --json \
    > "$out/build.json" 2> "$out/build.err"
  rc=$?
  echo "[$(( $(date +%s) - t0 )) s] build rc=$rc"
  cp dbs/sm9084/sm9084.HIP.fdb.txt dbs/sm9084/sm9084.db.txt "$sys/"
  miopenkernels kdb verify "$sys/sm9084.kdb" > "$out/kdb_verify.txt" 2>&1
  rc=$?
  echo "[$(( $(date +%s) - t0 )) s] kdb verify rc=$rc $(tail -1 "$out/kdb_verify.txt")"
}
