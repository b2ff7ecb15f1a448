#!/usr/bin/env bash
# Set up a machine for miopenkernels: the compilers from Debian (as root on Debian 12) and a
# virtual environment in .venv with the project and its build, CUDA and development extras.
set -euo pipefail
cd "$(dirname "$0")/.."

if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q
    apt-get install -y -q --no-install-recommends \
        hipcc clang-19 clang-tools-19 lld-19 llvm-19 python3 python3-venv python3-pip git ca-certificates
fi

# PYTHON: the interpreter of the environment (ci/python.sh provides one per CI matrix entry).
"${PYTHON:-python3}" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e '.[build,cuda,dev]'
# The torch extra's tests (tests/unit/test_torch_ops.py) run on torch's CPU build; the pin is
# the version the machine image holds as a CPU wheel, so pip fetches no CUDA build.
.venv/bin/python -m pip install -q torch==2.13.0
echo "set-up done: .venv/bin/miopenkernels --help"
