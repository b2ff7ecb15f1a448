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
