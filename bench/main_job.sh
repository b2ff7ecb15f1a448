#!/usr/bin/env bash
# The README's main job timed as a new user runs it: a fresh clone of a tree, `bash
# ci/setup.sh`, then `.venv/bin/miopenkernels build --out out` with an empty object cache
# (MIOPENKERNELS_CACHE), then the same build again (a no-op rebuild). Writes OUTFILE
# (bench/results/main_job-<N>cpu-<tree>.txt): a header with the set-up, build and rebuild
# seconds, the build's progress lines and tables, then the rebuild's table.
#
#   bash bench/main_job.sh [TREE] [OUTFILE]     # TREE: a commit of this checkout (HEAD)
#
# PYTHON picks the interpreter ci/setup.sh uses. It takes about half an hour on 2 cores; what
# else runs on the machine meanwhile shows in the build time (say so in the results).
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
tree="$(git -C "$repo" rev-parse --short "${1:-HEAD}")"
out="${2:-$repo/bench/results/main_job-$(nproc)cpu-$tree.txt}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
git clone -q "$repo" "$work/clone"
git -C "$work/clone" checkout -q "$tree"
cd "$work/clone"
export MIOPENKERNELS_CACHE="$work/cache"
now() { date +%s.%N; }
t0=$(now)
bash ci/setup.sh > "$work/setup.log" 2>&1
t1=$(now)
.venv/bin/miopenkernels build --out out > "$work/build.out" 2> "$work/build.err"
t2=$(now)
.venv/bin/miopenkernels build --out out > "$work/rebuild.out" 2> "$work/rebuild.err"
t3=$(now)
secs() { python3 -c "print(f'{$2 - $1:.2f}')"; }
{
  echo "# README main job (bash ci/setup.sh && .venv/bin/miopenkernels build --out out) on a fresh clone of the tree of $tree,"
  echo "# $(nproc) cores, empty object cache (MIOPENKERNELS_CACHE), $(date -u +%F); setup $(secs "$t0" "$t1") s, build $(secs "$t1" "$t2") s, rebuild $(secs "$t2" "$t3") s"
  cat "$work/build.err" "$work/build.out"
  echo "# rebuild"
  cat "$work/rebuild.out"
} > "$out"
echo "$out"
