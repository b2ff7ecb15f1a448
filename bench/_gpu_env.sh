# Sourced by the bench/gpu_*.sh scripts: the project installed from this checkout into
# /tmp/site (the GPU machine has its Python packages but not this project), unbuffered output,
# and user/system database locations of their own so runs do not see each other's files.
export PYTHONUNBUFFERED=1
python3 -m pip install -q --upgrade --no-deps --no-build-isolation --target /tmp/site . >/dev/null 2>&1
export PYTHONPATH=/tmp/site PATH=/tmp/site/bin:$PATH
export MIOPEN_SYSTEM_DB_PATH="${MIOPEN_SYSTEM_DB_PATH:-/tmp/nosys}" \
       MIOPEN_USER_DB_PATH="${MIOPEN_USER_DB_PATH:-/tmp/mkuser}" \
       MIOPEN_CUSTOM_CACHE_DIR="${MIOPEN_CUSTOM_CACHE_DIR:-/tmp/mkcache}"
mkdir -p "$MIOPEN_SYSTEM_DB_PATH"
