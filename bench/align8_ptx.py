"""What assuming multiples of 8 in place of 16 changes in an aligned object's code, without a GPU.

The 16-bit channels-last objects of the implicit GEMM kernels assume their channel counts and
strides multiples of `align_divisor` (8): a layer of 8k channels (RegNet's 104, 440; the
EfficientNets' 24, 40) then takes the aligned object instead of the generic one. This script
takes the builder's aligned jobs of the kernels asked for (default: backward data and backward
weights) for sm90 and gfx942, compiles each as the builder does (`compiler.compile_job`) twice,
once as planned (8) and once with every 8 of its `--assume` list made 16, and compares the two
codes (PTX for sm90, AMDGPU assembly for gfx942): identical once comments and debug lines are
gone (`same`), differing only in the names of registers, labels and parameters (`names`), or
differing (`different`). Per object it also counts the vector memory instructions of each side
(16-byte global loads and stores, 16-byte asynchronous copies; AMD: dwordx4 global and buffer
accesses), the width a 16-bit channel load compiles to, and those of the generic object (no
assumption, compiled a third time), which such a layer took before.

    python bench/align8_ptx.py [--kernel conv2d_bwd_data ...] [--limit 40] [--amd 6]
        [--out bench/results/align8_backward_ptx.json] [--json]
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import re
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from triton_ptx_compare import _capture_asm, _traits, normalise, status_of  # noqa: E402

# 16-byte memory instructions: PTX global vectors of four 32-bit words (any cache hints) and
# cp.async.cg (16 bytes, the only size it copies); AMDGPU dwordx4.
_VECTOR = {
    "ptx": re.compile(r"^(?:@!?%\w+ )?(?:(?:ld|st)\.global\S*\.v4\.b32|"
                      r"cp\.async\.cg\.shared\.global)\b", re.M),
    "amdgcn": re.compile(r"^(?:global|buffer)_(?:load|store)_dwordx4\b", re.M),
}
# An instruction's opcode: the first word of a line that is not a directive, label or brace.
_OPCODE = re.compile(r"^(?:@!?%\w+\s+)?([a-z_][\w.:]*)", re.M)
_MEMORY = re.compile(r"^(ld|st|cp|atom|red|global_|buffer_|ds_|flat_|scratch_)")


def opcodes(lines: list[str]) -> dict[str, int]:
    """How many times each opcode occurs (directives, labels and braces left out)."""
    counts: dict[str, int] = {}
    for line in lines:
        m = _OPCODE.match(line)
        if m and not line.startswith((".", "}", "{")) and not line.endswith(":"):
            counts[m.group(1)] = counts.get(m.group(1), 0) + 1
    return counts


def aligned_jobs(kernels: tuple[str, ...], archs: tuple[str, ...]) -> list[Any]:
    """The builder's distinct aligned 16-bit channels-last jobs of `kernels` for `archs`, in a
    fixed order (a digest of each job)."""
    from miopenkernels.builder.jobs import build_jobs
    from miopenkernels.builder.manifest import load_manifests
    from miopenkernels.compiler import is_triton_job
    from miopenkernels.target import default_targets

    targets = [t for t in default_targets() if t.arch in archs]
    out: dict[tuple[str, str], Any] = {}
    for target, jobs in build_jobs(targets, load_manifests(None)).items():
        for job in jobs:
            opts = " ".join(job.options)
            if (is_triton_job(job) and job.kernel_name in kernels and "C:8" in opts
                    and "-DCHANNELS_LAST=1" in opts):
                out.setdefault((target.arch, job.kdb_args), job)
    return sorted(out.values(), key=lambda j: hashlib.sha256(j.kdb_args.encode()).hexdigest())


def assuming_16(job: Any) -> Any:
    """The same job with each argument it assumes a multiple of 8 assumed a multiple of 16."""
    options = tuple(re.sub(r":8(?=,|$)", ":16", o) if o.startswith("--assume=") else o
                    for o in job.options)
    return dataclasses.replace(job, options=options)


def generic(job: Any) -> Any:
    """The same job assuming nothing: the object a layer meeting neither divisor takes."""
    return dataclasses.replace(job, options=tuple(o for o in job.options
                                                  if not o.startswith("--assume=")))


def compare_job(job: Any, last: dict[str, Any]) -> dict[str, Any]:
    from miopenkernels.compiler import compile_job

    asm = "ptx" if job.target.arch.startswith("sm") else "amdgcn"
    texts = []
    start = time.perf_counter()
    for variant in (job, assuming_16(job), generic(job)):
        compile_job(variant, None)
        texts.append(last["asm"][asm])
    a, b, g = (normalise(t, asm) for t in texts)
    status = status_of(a, b)
    vec = [len(_VECTOR[asm].findall("\n".join(t))) for t in (a, b, g)]
    ops_a, ops_b = opcodes(a), opcodes(b)
    changed = sum(abs(ops_a.get(k, 0) - ops_b.get(k, 0)) for k in {*ops_a, *ops_b})
    memory = {k: v for k, v in ops_a.items() if _MEMORY.match(k)}
    memory_b = {k: v for k, v in ops_b.items() if _MEMORY.match(k)}
    return {"arch": job.target.arch, "kernel": job.kernel_name,
            "kind": "-".join(p for p in _traits(job)[1:] if p not in ("", "-")),
            "status": status, "lines_8": len(a), "lines_16": len(b),
            "instructions_8": sum(ops_a.values()), "instructions_16": sum(ops_b.values()),
            "opcode_count_changes": changed, "same_memory_ops": memory == memory_b,
            "vector_ops_8": vec[0], "vector_ops_16": vec[1], "vector_ops_generic": vec[2],
            "seconds": round(time.perf_counter() - start, 2)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kernel", action="append", default=[],
                    help="kernel to sample (default: conv2d_bwd_data and conv2d_bwd_weight)")
    ap.add_argument("--limit", type=int, default=40, help="sm90 objects to compare")
    ap.add_argument("--amd", type=int, default=6, help="gfx942 objects to compare")
    ap.add_argument("--out", type=Path, default=HERE / "results" / "align8_backward_ptx.json")
    ap.add_argument("--json", action="store_true", help="print the result as JSON")
    args = ap.parse_args()
    kernels = tuple(args.kernel) or ("conv2d_bwd_data", "conv2d_bwd_weight")

    from rich.console import Console
    from rich.progress import Progress
    from rich.table import Table

    jobs = aligned_jobs(kernels, ("sm90", "gfx942"))
    chosen = ([j for j in jobs if j.target.arch == "sm90"][: args.limit]
              + [j for j in jobs if j.target.arch == "gfx942"][: args.amd])
    last = _capture_asm()
    rows = []
    with Progress(transient=True, disable=args.json) as progress:
        task = progress.add_task("compiling each object twice", total=len(chosen))
        for job in chosen:
            rows.append(compare_job(job, last))
            progress.advance(task)
    counts: dict[str, int] = {}
    for r in rows:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    import triton

    result = {"command": " ".join(["python", "bench/align8_ptx.py", *sys.argv[1:]]),
              "kernels": list(kernels), "triton": triton.__version__,
              "aligned_jobs": {a: sum(j.target.arch == a for j in jobs)
                               for a in ("sm90", "gfx942")},
              "compared": len(rows), "counts": counts,
              "same_vector_ops": sum(r["vector_ops_8"] == r["vector_ops_16"] for r in rows),
              "same_memory_ops": sum(r["same_memory_ops"] for r in rows),
              "generic_without_vectors": sum(r["vector_ops_generic"] == 0 for r in rows),
              "rows": rows}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    if args.json:
        print(json.dumps(result, indent=1))
        return 0
    table = Table(title=f"assuming 8 against 16 ({len(rows)} objects)")
    for col in ("arch", "kernel", "kind", "status", "instr. (8)", "(16)", "opcode changes",
                "16-byte ops (8)", "(16)", "(generic)"):
        table.add_column(col)
    for r in rows:
        table.add_row(r["arch"], r["kernel"], r["kind"], r["status"], str(r["instructions_8"]),
                      str(r["instructions_16"]), str(r["opcode_count_changes"]),
                      str(r["vector_ops_8"]),
                      str(r["vector_ops_16"]), str(r["vector_ops_generic"]))
    Console().print(table)
    print(f"{counts}; the same memory operations in {result['same_memory_ops']} of {len(rows)}, "
          f"the same 16-byte ones in {result['same_vector_ops']}; the generic object has no "
          f"16-byte one in {result['generic_without_vectors']}; written {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
