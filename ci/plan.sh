#!/usr/bin/env bash
# Print the kernel build matrix for the targets matching GLOB (JSON: {"include": [...]}).
# Under GitHub Actions it is also the step output `matrix`, which kernels.yml feeds to fromJSON.
#
#   bash ci/plan.sh ['gfx9*,sm90-*']
set -euo pipefail
source "$(dirname "$0")/_lib.sh"
case "${1:-}" in -h|--help) usage; exit 0 ;; esac
cd "$ROOT"

glob="${1:-*}"
if [ ! -x "$MK" ]; then
    # The plan needs only the project itself, not the compilers or packaging tools.
    python3 -m venv .venv
    .venv/bin/python -m pip install -q -e .
fi
matrix="$("$MK" matrix --targets "$glob" --json)"
printf '%s\n' "$matrix"
set_output matrix "$matrix"
