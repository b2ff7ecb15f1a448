#!/usr/bin/env bash
# Attach a ci/publish.sh output to the GitHub release TAG (created if missing), as the release
# job of kernels.yml does on a v* tag: every wheel and conda package, the wheel index and the
# conda channel as tarballs, SHA256SUMS. Needs gh with GH_TOKEN (and GH_REPO outside a clone).
#
#   bash ci/release.sh [--dry-run] TAG DIR    --dry-run: make the assets, list them, upload nothing
set -euo pipefail
source "$(dirname "$0")/_lib.sh"
dry_run=0
case "${1:-}" in
    -h|--help) usage; exit 0 ;;
    --dry-run) dry_run=1; shift ;;
esac
[ $# -eq 2 ] || { usage >&2; exit 2; }
tag="$1"
dir="$(cd "$2" && pwd)"
for part in simple conda SHA256SUMS; do
    [ -e "$dir/$part" ] || die "$dir/$part missing: not made by ci/publish.sh"
done

assets="$(mktemp -d "${RUNNER_TEMP:-${TMPDIR:-/tmp}}/release.XXXXXX")"
trap 'rm -rf "$assets"' EXIT
tar -C "$dir" -czf "$assets/wheel-index-$tag.tar.gz" simple
tar -C "$dir" -czf "$assets/conda-channel-$tag.tar.gz" conda
find "$dir/simple" "$dir/conda" -type f \( -name '*.whl' -o -name '*.conda' -o -name '*.tar.bz2' \) \
    -exec cp {} "$assets/" \;
# Flat names, so that `sha256sum -c SHA256SUMS` works in a folder of downloaded assets.
(cd "$assets" && sha256sum -- * >SHA256SUMS)
mapfile -t files < <(find "$assets" -type f | sort)
printf 'asset: %s\n' "${files[@]##*/}"

if [ "$dry_run" = 1 ]; then
    echo "dry run: would attach ${#files[@]} assets to release $tag"
    exit 0
fi
command -v gh >/dev/null || die "gh (GitHub CLI) not found"
if gh release view "$tag" >/dev/null 2>&1; then
    gh release upload "$tag" --clobber "${files[@]}"
else
    gh release create "$tag" --verify-tag --title "$tag" \
        --notes "Kernel packages: pip install --index-url <wheel index> or a conda channel." \
        "${files[@]}"
fi
