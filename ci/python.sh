#!/usr/bin/env bash
# Provide CPython VERSION for ci/setup.sh: print its path and, under GitHub Actions, export
# PYTHON=<path> to later steps (ci/setup.sh makes .venv with $PYTHON). The system python3 is
# used when it is that version; otherwise uv installs a standalone build outside the checkout.
#
#   bash ci/python.sh 3.10
set -euo pipefail
source "$(dirname "$0")/_lib.sh"
case "${1:-}" in
    -h|--help) usage; exit 0 ;;
    "") usage >&2; exit 2 ;;
esac
version="$1"

if ! command -v python3 >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1 \
        && [ "$(id -u)" = 0 ]; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q
    apt-get install -y -q --no-install-recommends python3 python3-venv ca-certificates
fi

if [ "$(python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')" = "$version" ]; then
    python="$(command -v python3)"
else
    tools="${RUNNER_TEMP:-${TMPDIR:-/tmp}}/miopenkernels-python"
    if [ ! -x "$tools/uv/bin/uv" ]; then
        python3 -m venv "$tools/uv"
        "$tools/uv/bin/python" -m pip install -q uv
    fi
    export UV_PYTHON_INSTALL_DIR="$tools/pythons"
    "$tools/uv/bin/uv" python install "$version"
    python="$("$tools/uv/bin/uv" python find --managed-python "$version")"
fi
"$python" -c 'import sys, venv; print(sys.version)' >&2
echo "$python"
if [ -n "${GITHUB_ENV:-}" ]; then echo "PYTHON=$python" >>"$GITHUB_ENV"; fi
