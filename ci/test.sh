#!/usr/bin/env bash
# Lint, type-check, check the import contracts and test. Integration tests use the real compilers
# and packaging tools; GPU tests skip on machines without a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/.venv/bin:$PATH"
ruff check .
bash ci/typecheck.sh
# lint-imports on the package as installed: the contracts of pyproject.toml (layers, siblings that
# must not know each other, no cycles); tests/unit/test_layers.py also counts module cycles.
python ci/import_graph.py lint
pytest -n "${PYTEST_WORKERS:-2}" -q -m "not timed" tests "$@"
# Tests that bound their own CPU time run alone: beside another worker, on a 2-core box, a
# process's CPU time also counts the caches and cycles that worker takes. Exit 5: "$@" left
# none of them to run.
status=0
pytest -p no:xdist -q -m timed tests "$@" || status=$?
[ "$status" -eq 0 ] || [ "$status" -eq 5 ] || exit "$status"
