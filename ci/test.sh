#!/usr/bin/env bash
# Lint, type-check and test. Integration tests use the real compilers and packaging tools;
# GPU tests skip on machines without a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/.venv/bin:$PATH"
ruff check .
bash ci/typecheck.sh
pytest -n "${PYTEST_WORKERS:-2}" -q tests "$@"
