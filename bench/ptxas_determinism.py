"""Whether the ptxas Triton ships gives the same cubin twice from the same PTX.

For a target (default sm100-148) takes the default build's Triton jobs of one kernel (default
conv2d_bwd_weight, every K-th), makes each job's PTX once through Triton, and runs Triton's
ptxas for the target on that one PTX file `--runs` times with the flags Triton passes (no line
tables); prints per job how many distinct cubins came out and writes JSON (default
bench/results/ptxas_determinism-<target>.json) with ptxas's version.

    .venv/bin/python bench/ptxas_determinism.py [--target sm100-148] [--kernel K] [--every K]
        [--runs N] [--out FILE] [--json]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table


def _ptx(job: Any) -> str:
    import triton
    from miopenkernels.compiler import triton as tc
    from miopenkernels.compiler import triton_arch
    from miopenkernels.kernel_sources import kernels_dir
    from triton.compiler import ASTSource

    opts = tc.TritonOptions(job.options)
    fn = tc.kernel_function(kernels_dir() / job.kernel_file, job.kernel_name)
    sig, cons, attrs = tc.source_arguments(fn, opts.signature, opts.constexprs,
                                           opts.assumptions)
    with triton.knobs.cache.scope(), triton.knobs.compilation.scope(), \
            tempfile.TemporaryDirectory() as tmp, tc.mma_env(opts.mma):
        triton.knobs.cache.home_dir = tmp
        triton.knobs.cache.dir = tmp
        triton.knobs.compilation.disable_line_info = True
        kernel = triton.compile(ASTSource(fn, signature=sig, constexprs=cons, attrs=attrs),
                                target=tc.gpu_target(triton_arch(job.target)),
                                options=dict(opts.compile))
    return kernel.asm["ptx"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--target", default="sm100-148")
    ap.add_argument("--kernel", default="conv2d_bwd_weight")
    ap.add_argument("--every", type=int, default=4)
    ap.add_argument("--runs", type=int, default=6)
    ap.add_argument("--out", default="")
    ap.add_argument("--json", action="store_true", help="Print the JSON, not the table.")
    args = ap.parse_args()
    if args.every < 1 or args.runs < 2:
        ap.error("--every must be at least 1 and --runs at least 2")
    from miopenkernels.builder.jobs import build_jobs
    from miopenkernels.builder.manifest import load_manifests
    from miopenkernels.compiler import is_triton_job
    from miopenkernels.target import select_targets
    from triton.backends.nvidia.compiler import get_ptxas, sm_arch_from_capability

    (target,) = select_targets(args.target)
    if not target.arch.startswith("sm"):
        ap.error("an NVIDIA target: ptxas is NVIDIA's")
    jobs = [j for j in build_jobs([target], load_manifests())[target]
            if is_triton_job(j) and j.kernel_name == args.kernel][::args.every]
    capability = int(target.arch[2:])
    ptxas = get_ptxas(capability)
    gpu = sm_arch_from_capability(capability)  # what Triton tells ptxas
    said = subprocess.run([ptxas.path, "--version"], capture_output=True, text=True).stdout
    version = next((ln.strip() for ln in said.splitlines() if "release" in ln), said.strip())
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "kernel.ptx"
        for job in jobs:
            src.write_text(_ptx(job))
            seen: dict[str, int] = {}
            for _ in range(args.runs):
                subprocess.run([ptxas.path, "-lineinfo", "-suppress-debug-info", "-v",
                                f"--gpu-name={gpu}", str(src), "-o", f"{src}.o"],
                               check=True, capture_output=True)
                digest = hashlib.sha256(Path(f"{src}.o").read_bytes()).hexdigest()[:12]
                seen[digest] = seen.get(digest, 0) + 1
            rows.append({"options": " ".join(job.options), "cubins": seen})
    result = {"target": target.name, "kernel": args.kernel, "ptxas": ptxas.path.split("/")[-1],
              "ptxas_version": version, "runs": args.runs, "jobs": len(rows),
              "jobs_with_several_cubins": sum(len(r["cubins"]) > 1 for r in rows),
              "rows": rows}
    out = Path(args.out or f"bench/results/ptxas_determinism-{target.name}.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n")
    if args.json:
        print(json.dumps(result, indent=1))
        return
    table = Table(title=f"{result['ptxas']} ({version}), {args.runs} runs on one PTX per job")
    table.add_column("job options")
    table.add_column("cubins (times each)", justify="right")
    for r in rows:
        table.add_row(r["options"][-90:], " ".join(str(n) for n in r["cubins"].values()))
    console = Console()
    console.print(table)
    console.print(f"{result['jobs_with_several_cubins']} of {len(rows)} jobs gave more than one "
                  f"cubin; written {out}")


if __name__ == "__main__":
    main()
