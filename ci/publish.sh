#!/usr/bin/env bash
# Publish what the build and tune jobs made, as the publish job of kernels.yml does:
#   IN/pkg-<basename>/     ci/build-target.sh output (target, build/, dist/), one per target
#   IN/shards-<basename>/  ci/tune-target.sh output (optional): merged with dbs/<basename>/ by
#                          `miopenkernels db merge`, then that target's packages are rebuilt
# into OUT:
#   OUT/simple/            PEP 503 index of the wheels (pip install --index-url file://OUT/simple)
#   OUT/conda/             conda channel, indexed (noarch/repodata.json), with the selector
#                          package miopenkernels-gpu over every published target
#   OUT/dbs/<basename>/    the merged databases of tuned targets (to commit under dbs/)
#   OUT/SHA256SUMS         every published package
#
#   bash ci/publish.sh IN OUT
#
# Environment: MANIFEST  the manifest the packages were built with (listed in their manifests)
set -euo pipefail
source "$(dirname "$0")/_lib.sh"
case "${1:-}" in -h|--help) usage; exit 0 ;; esac
[ $# -eq 2 ] || { usage >&2; exit 2; }
in="$(cd "$1" && pwd)"
mkdir -p "$2"
out="$(cd "$2" && pwd)"
need_cli
cd "$ROOT"

compgen -G "$in/pkg-*/" >/dev/null || die "no pkg-<basename> folders in $in"
work="$(mktemp -d "${RUNNER_TEMP:-${TMPDIR:-/tmp}}/publish.XXXXXX")"
trap 'rm -rf "$work"' EXIT

dists=()
for pkg in "$in"/pkg-*/; do
    pkg="${pkg%/}"
    base="${pkg##*/pkg-}"
    [ -f "$pkg/target" ] || die "$pkg/target missing: not made by ci/build-target.sh"
    name="$(cat "$pkg/target")"
    dist="$pkg/dist"
    shards="$in/shards-$base"
    if [ -d "$shards" ]; then
        group "merge $name"
        mapfile -t files < <(find "$ROOT/dbs/$base" "$shards" -type f \
            \( -name '*.db' -o -name '*.db.txt' -o -name '*.fdb.txt' \) 2>/dev/null | sort)
        [ "${#files[@]}" -gt 0 ] || die "$shards holds no database shards"
        "$MK" db merge "${files[@]}" --out "$out/dbs/$base"
        endgroup
        group "repackage $name"
        dist="$work/dist-$base"
        args=(package --from-build "$pkg/build" --targets "$name" --dbs "$out/dbs" --out "$dist")
        if [ -n "${MANIFEST:-}" ]; then args+=(--manifest "$MANIFEST"); fi
        "$MK" "${args[@]}"
        endgroup
    fi
    dists+=("$dist")
done

group "index"
# Kernel packages of every target; each build job's channel also holds a selector package
# (miopenkernels-gpu) for its own target only, so the selector is rebuilt here for all of them.
mapfile -t wheels < <(find "${dists[@]}" -maxdepth 1 -name '*.whl' | sort)
mapfile -t condas < <(find "${dists[@]/%//channel}" -name 'miopenkernels-*.conda' \
    ! -name 'miopenkernels-gpu-*' | sort)
[ "${#wheels[@]}" -eq "${#dists[@]}" ] || die "expected ${#dists[@]} wheels, found ${#wheels[@]}"
[ "${#condas[@]}" -eq "${#dists[@]}" ] \
    || die "expected ${#dists[@]} conda packages, found ${#condas[@]}"
rm -rf "$out/simple" "$out/conda"
"$ROOT/.venv/bin/python" - "$out" "${#wheels[@]}" "${wheels[@]}" "${condas[@]}" <<'PY'
import sys
from pathlib import Path

from miopenkernels import __version__
from miopenkernels.builder.package.conda import build_selector_package
from miopenkernels.builder.package.index import add_to_channel, write_simple_index
from miopenkernels.target import Target

out, n = Path(sys.argv[1]), int(sys.argv[2])
wheels, condas = [Path(p) for p in sys.argv[3:3 + n]], [Path(p) for p in sys.argv[3 + n:]]
write_simple_index(wheels, out / "simple")
# miopenkernels-<arch>-<cu>-<version>-<build>.conda
targets = [Target(p.name.split("-")[1], int(p.name.split("-")[2])) for p in condas]
build_selector_package(targets, __version__, out / "conda")
add_to_channel(condas, out / "conda")
PY
endgroup

(cd "$out" && find simple conda -type f \( -name '*.whl' -o -name '*.conda' -o -name '*.tar.bz2' \) \
    | sort | xargs sha256sum >SHA256SUMS)
echo "published to $out:"
cat "$out/SHA256SUMS"
