"""Whether a change to the Triton kernels' source changed the code they compile to, without a GPU.

`dump` compiles a sample of the objects the builder makes (its own plan for the default
manifests: for sm90 one job of every Triton kernel per 16-bit or FP32 type, precision and
layout, drawn in a fixed order that mixes tiles, splits and matrix instructions; a few gfx942
objects beside them) through the builder's own compile path (`compiler.compile_job`, so the
same options and knobs) and writes each object's PTX (sm90) or AMDGPU assembly (gfx942) to a
folder, with index.json naming the job of each file and the sha256 of its kdb blob (code
object and launch metadata). `--kernels DIR` compiles another copy of kernels/ (e.g.
`git archive REV kernels | tar -x -C /tmp/rev`), so that one tree can give both sides;
`--kernel NAME` keeps one kernel's objects (the AMD objects then drawn among them), `--every`
takes every sm90 object of the sample's kernels rather than one per kind, and `--arch` names
the AMD targets (gfx942 unless given; `--amd` objects of each, one per kernel first, then one
per kernel and layout). `compare` reads two such folders and says, per
object, whether the text is identical once comments, debug line information and blank lines
are stripped (`same`), differs only in the names of registers, labels and parameters
(`names`), or differs (`different`), and whether the code objects are the same bytes.

    python bench/triton_ptx_compare.py dump --out /tmp/ptx-before [--kernels DIR] [--amd 6]
        [--kernel NAME ...] [--every] [--arch gfx942 --arch gfx90a ...]
    python bench/triton_ptx_compare.py compare /tmp/ptx-before /tmp/ptx-after [--json FILE]

`compare` exits 1 where any object differs beyond such names, or is missing.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
import time
from pathlib import Path
from typing import Any

SM = "sm90"
AMD = "gfx942"
_OPT_RE = re.compile(r"-D(PRECISION|CHANNELS_LAST|SPLIT_K|W_BY_OUT)=(\S+)")
_PTR_RE = re.compile(r"--signature=[^:]+:\*(\w+)")
_STRIP = {
    # PTX: `//` comments, .loc/.file lines and the DWARF sections Triton may add.
    "ptx": (re.compile(r"//.*$"), re.compile(r"^\s*\.(loc|file)\b")),
    # AMDGPU assembly: `;` comments and .loc/.file lines.
    "amdgcn": (re.compile(r";.*$"), re.compile(r"^\s*\.(loc|file|ident)\b")),
}
# Names the compiler picks: PTX registers (%r12, %rd3), basic-block labels ($L__BB0_4) and
# parameter symbols; not opcodes, not immediates.
_NAME_RE = re.compile(r"%[A-Za-z_]\w*|\$L__\w+|\b\w+_param_\d+\b")


def _traits(job: Any) -> tuple[str, ...]:
    """What shapes an object besides its tile: kernel, element type, constexprs, mma."""
    opts = " ".join(job.options)
    ptr = _PTR_RE.search(opts)
    consts = dict(_OPT_RE.findall(opts))
    split = consts.get("SPLIT_K", "1")
    return (job.kernel_name, ptr.group(1) if ptr else "-", consts.get("PRECISION", "-"),
            consts.get("CHANNELS_LAST", "-"), "split" if split not in ("1", "-") else "",
            consts.get("W_BY_OUT", "-"), "mma2" if "--mma=2" in job.options else "")


def _kind(job: Any) -> tuple[str, ...]:
    """The sample's strata: kernel, 16-bit or FP32, precision, layout (the job drawn for each
    brings its own tile, split and matrix instruction)."""
    kernel, element, precision, layout = _traits(job)[:4]
    return kernel, "16-bit" if element in ("fp16", "bf16") else element, precision, layout


def sample_jobs(amd: int, archs: tuple[str, ...] = (AMD,), only: tuple[str, ...] = (),
                every: bool = False) -> list[Any]:
    """The builder's distinct Triton jobs of the kernels `only` (all if empty) for sm90, one
    per kind (see `_kind`; every one with `every`), and `amd` jobs for each of `archs` (one per
    kernel first, then one per kernel and layout, then the rest), in a fixed order."""
    from miopenkernels.builder.jobs import build_jobs
    from miopenkernels.builder.manifest import load_manifests
    from miopenkernels.compiler import is_triton_job
    from miopenkernels.target import default_targets

    targets = [t for t in default_targets() if t.arch in (SM, *archs)]
    distinct: dict[tuple[str, str], Any] = {}
    for target, jobs in build_jobs(targets, load_manifests(None)).items():
        for job in jobs:
            if is_triton_job(job) and (not only or job.kernel_name in only):
                distinct.setdefault((target.arch, job.kdb_args), job)
    chosen: list[Any] = []
    seen: set[tuple[str, ...]] = set()
    # In the order of a digest of the job: a fixed order that mixes tiles, splits, 16-bit
    # types and matrix instructions across the strata.
    for (arch, _), job in sorted(distinct.items(), key=lambda item: job_id(item[1])[-10:]):
        if arch == SM and (every or _kind(job) not in seen):
            seen.add(_kind(job))
            chosen.append(job)
    for target_arch in archs:
        amd_jobs = sorted((j for (a, _), j in distinct.items() if a == target_arch),
                          key=lambda j: (j.kernel_name, j.kdb_args))
        firsts = {j.kernel_name: j for j in reversed(amd_jobs)}
        layouts = {(j.kernel_name, _traits(j)[3]): j for j in reversed(amd_jobs)}
        ordered = sorted(firsts.values(), key=lambda j: j.kernel_name)
        ordered += [j for _, j in sorted(layouts.items()) if j not in ordered]
        chosen += (ordered + [j for j in amd_jobs if j not in ordered])[:amd]
    return chosen


def job_id(job: Any) -> str:
    """A file name for a job: target, kernel, kind and a digest of its kdb arguments."""
    digest = hashlib.sha256(f"{job.kdb_name} {job.kdb_args}".encode()).hexdigest()[:10]
    kind = "-".join(p for p in _traits(job)[1:] if p not in ("", "-"))
    return f"{job.target.arch}-{job.kernel_name}-{kind}-{digest}"


def _capture_asm() -> dict[str, Any]:
    """Make `triton.compile` keep its last result's assembly texts in the returned dict (the
    builder's compile path returns only the code object)."""
    import triton

    last: dict[str, Any] = {}
    original = triton.compile

    def compile_and_keep(*args: Any, **kwargs: Any) -> Any:
        kernel = original(*args, **kwargs)
        last["asm"] = dict(kernel.asm)
        return kernel

    triton.compile = compile_and_keep
    return last


def dump(out: Path, kernels: Path | None, amd: int, only: list[str], archs: list[str],
         every: bool) -> list[dict[str, Any]]:
    from miopenkernels.compiler import compile_job

    out.mkdir(parents=True, exist_ok=True)
    last = _capture_asm()
    rows = []
    for job in sample_jobs(amd, tuple(archs) or (AMD,), tuple(only), every):
        ident = job_id(job)
        start = time.perf_counter()
        row: dict[str, Any] = {"id": ident, "arch": job.target.arch, "kernel": job.kernel_name,
                               "kernel_file": job.kernel_file, "kdb_args": job.kdb_args}
        try:
            blob = compile_job(job, kernels)
        except Exception as exc:  # noqa: BLE001 - a failed compile is a row, not the end
            row["error"] = f"{type(exc).__name__}: {str(exc)[:300]}"
        else:
            asm = "ptx" if job.target.arch.startswith("sm") else "amdgcn"
            (out / f"{ident}.{asm}").write_text(last["asm"][asm])
            row["asm"] = asm
            # The kdb blob: the code object (cubin, hsaco) and its launch metadata.
            row["object_sha256"] = hashlib.sha256(blob).hexdigest()
        row["seconds"] = round(time.perf_counter() - start, 2)
        rows.append(row)
        print(f"{row['seconds']:7.1f}s {ident} {row.get('error', '')}", flush=True)
    (out / "index.json").write_text(json.dumps(rows, indent=1) + "\n")
    return rows


def normalise(text: str, asm: str) -> list[str]:
    """The lines that make the code: comments, debug line information and blank lines gone,
    and no DWARF section."""
    comment, debug = _STRIP[asm]
    lines = []
    in_debug = False
    for line in text.splitlines():
        if line.lstrip().startswith(".section") and ".debug" in line:
            in_debug = True
        if in_debug:
            in_debug = line.strip() != "}"
            continue
        line = comment.sub("", line).rstrip()
        if line.strip() and not debug.match(line):
            lines.append(" ".join(line.split()))
    return lines


def status_of(before: list[str], after: list[str]) -> str:
    """`same`, `names` (only register, label and parameter names differ) or `different`, of
    two normalised texts."""
    if before == after:
        return "same"
    if [_NAME_RE.sub("_", x) for x in before] == [_NAME_RE.sub("_", x) for x in after]:
        return "names"
    return "different"


def compare(before: Path, after: Path) -> list[dict[str, Any]]:
    """Per object of `before`'s index: same, names (only register, label and parameter names
    differ), different, or missing (no text on one side)."""
    rows = []
    after_rows = {r["id"]: r for r in json.loads((after / "index.json").read_text())}
    for row in json.loads((before / "index.json").read_text()):
        asm = row.get("asm")
        a = before / f"{row['id']}.{asm}"
        b = after / f"{row['id']}.{asm}"
        result = {"id": row["id"], "arch": row["arch"], "kernel": row["kernel"]}
        if not asm or not a.is_file() or not b.is_file():
            result.update(status="missing", lines=0)
            rows.append(result)
            continue
        la, lb = normalise(a.read_text(), asm), normalise(b.read_text(), asm)
        status = status_of(la, lb)
        result.update(status=status, lines=len(la), lines_after=len(lb))
        after_row = after_rows.get(row["id"], {})
        if "object_sha256" in row and "object_sha256" in after_row:
            result["same_object"] = row["object_sha256"] == after_row["object_sha256"]
        rows.append(result)
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    d = sub.add_parser("dump", help="compile the sample and write its assembly to a folder")
    d.add_argument("--out", type=Path, required=True, help="folder for the texts and index.json")
    d.add_argument("--kernels", type=Path, default=None,
                   help="kernels folder to compile (default: this tree's)")
    d.add_argument("--amd", type=int, default=6, help="objects of each AMD target beside sm90's")
    d.add_argument("--arch", action="append", default=[],
                   help=f"an AMD target to sample (repeatable; default {AMD})")
    d.add_argument("--kernel", action="append", default=[],
                   help="only the sample's objects of this kernel (repeatable)")
    d.add_argument("--every", action="store_true",
                   help="every sm90 object of the sample's kernels, not one per kind")
    c = sub.add_parser("compare", help="compare two dumps")
    c.add_argument("before", type=Path)
    c.add_argument("after", type=Path)
    c.add_argument("--json", type=Path, default=None, help="write the rows and counts here")
    args = parser.parse_args()
    if args.command == "dump":
        rows = dump(args.out, args.kernels, args.amd, args.kernel, args.arch, args.every)
        failed = [r["id"] for r in rows if "error" in r]
        print(f"{len(rows) - len(failed)} objects written to {args.out}, {len(failed)} failed")
        return 1 if failed else 0
    from rich.console import Console
    from rich.table import Table

    rows = compare(args.before, args.after)
    table = Table(title=f"{args.before} -> {args.after}")
    for col in ("object", "lines", "status", "same code object"):
        table.add_column(col)
    for r in rows:
        table.add_row(r["id"], str(r["lines"]), r["status"],
                      "-" if "same_object" not in r else "yes" if r["same_object"] else "no")
    counts = {s: sum(r["status"] == s for r in rows)
              for s in ("same", "names", "different", "missing")}
    Console(width=140).print(table)
    print(", ".join(f"{n} {s}" for s, n in counts.items()))
    objects = [r["same_object"] for r in rows if "same_object" in r]
    if objects:
        print(f"code objects byte for byte the same: {sum(objects)} of {len(objects)}")
    if args.json:
        args.json.write_text(json.dumps({"counts": counts, "rows": rows}, indent=1) + "\n")
    return 1 if counts["different"] or counts["missing"] else 0


if __name__ == "__main__":
    sys.exit(main())
