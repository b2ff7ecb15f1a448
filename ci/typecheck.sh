#!/usr/bin/env bash
# Type-check the import package `miopenkernels`. Its folders (library/, builder/) are mapped onto
# the package by setup.py, which mypy cannot follow, so a tree of links gives mypy the package as
# Python sees it.
#
#   bash ci/typecheck.sh [mypy options]
set -euo pipefail
source "$(dirname "$0")/_lib.sh"
case "${1:-}" in -h|--help) usage; exit 0 ;; esac
cd "$(dirname "$0")/.."
root=.cache/typecheck
rm -rf "$root"
mkdir -p "$root/miopenkernels"
for entry in library/*; do
    case "$entry" in *__pycache__*) continue ;; esac
    ln -s "$PWD/$entry" "$root/miopenkernels/$(basename "$entry")"
done
ln -s "$PWD/builder" "$root/miopenkernels/builder"
ln -s "$PWD/kernels" "$root/miopenkernels/kernels"
ln -s "$PWD/dbs" "$root/miopenkernels/dbs"
MYPYPATH="$root" "${MYPY:-mypy}" -p miopenkernels "$@"
