#!/usr/bin/env bash
# Type-check the import package `miopenkernels`. Its folders (library/, builder/) are mapped onto
# the package by setup.py, which mypy cannot follow, so a tree of links (ci/import_graph.py stage)
# gives mypy the package as Python sees it.
#
#   bash ci/typecheck.sh [mypy options]
set -euo pipefail
source "$(dirname "$0")/_lib.sh"
case "${1:-}" in -h|--help) usage; exit 0 ;; esac
cd "$(dirname "$0")/.."
root=.cache/typecheck
rm -rf "$root"
python="${PYTHON:-python3}"  # the staging needs the standard library alone
"$python" ci/import_graph.py stage "$root"
MYPYPATH="$root" "${MYPY:-mypy}" -p miopenkernels "$@"
