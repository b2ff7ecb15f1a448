"""Which targets make the same code-generator module of a job (no GPU): the first sm90 dynamic
job of each of a few solvers through Triton's code generator for every matrix-core arch of the
default targets, the module text's digest per arch. Where archs whose keys (compiler/
triton_ir.py `share_key`: the job's `ir_key`, with the target's dot stage where the module has
a dot) differ print one digest, the key splits them by something that does not reach these
kernels' modules; where one key has two digests, it would share what it must not (UNSOUND,
exit status 1).

    python bench/triton_ir_classes.py [--solvers A,B] [--json]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from typing import Any

SOLVERS = ("ConvTritonImplicitGemmFwd", "ConvTritonDepthwiseFwd", "ConvTriton3dSmallCFwd",
           "ConvTritonPointwiseWrw", "ConvTriton3dWrw")
ARCHS = ("sm80", "sm86", "sm89", "sm90", "sm100", "sm120", "gfx908", "gfx90a", "gfx942",
         "gfx950", "gfx1100", "gfx1200")


def job_key(job: Any, arch: str) -> str | None:
    """The key under which targets share `job`'s module (compiler/triton_ir.py `share_key`)
    compiled for `arch` (DbId), as the builder's compile finds it; None where the arch cannot
    make the job's module (a TF32 dot on an arch without TF32)."""
    from miopenkernels.compiler import kernels_dir
    from miopenkernels.compiler.triton import (
        TritonOptions,
        ast_source,
        every_option,
        gpu_target,
    )
    from miopenkernels.compiler.triton_ir import dot_stage, ir_key, share_key
    from miopenkernels.kernel_sources import kernel_source

    opts = TritonOptions(tuple(job.options))
    source = kernel_source(job.kernel_file, kernels_dir(None))
    target, options = gpu_target(arch), dict(opts.compile)
    key = ir_key(ast_source(source, job.kernel_name, opts), target, options, f"mma={opts.mma}",
                 every_option(source, opts))
    if key is None:
        return None
    try:
        made = module(job, arch)
    except Exception:  # noqa: BLE001 - e.g. a TF32 dot on an arch that has none: no key
        return None
    return share_key(key, dot_stage(target, options), made)


def module(job: Any, arch: str) -> str:
    """The code-generator module of `job` for `arch` (DbId), made from its source."""
    from miopenkernels.compiler import kernels_dir
    from miopenkernels.compiler.triton import TritonOptions, ast_source, gpu_target
    from miopenkernels.compiler.triton_ir import module_text
    from miopenkernels.kernel_sources import kernel_source

    opts = TritonOptions(tuple(job.options))
    src = ast_source(kernel_source(job.kernel_file, kernels_dir(None)), job.kernel_name, opts)
    return module_text(src, gpu_target(arch), dict(opts.compile))


def digests(solver: str) -> dict[str, Any]:
    from miopenkernels.solvers import get_solver
    from miopenkernels.target import Target

    job = get_solver(solver).dynamic_jobs(Target("sm90", 132))[0]
    out: dict[str, Any] = {"kernel": job.kernel_name, "module": {}, "keys": {}}
    for arch in ARCHS:
        out["keys"][arch] = (job_key(job, arch) or "")[:8]
        out["module"][arch] = hashlib.sha256(module(job, arch).encode()).hexdigest()[:8]
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--solvers", default=",".join(SOLVERS))
    ap.add_argument("--json", action="store_true", help="print the rows as JSON")
    args = ap.parse_args(argv)
    rows = {s: digests(s) for s in args.solvers.split(",")}
    for row in rows.values():
        row["unsound_keys"] = sorted(key for key in set(row["keys"].values())
                                     if len({row["module"][a] for a in ARCHS
                                             if row["keys"][a] == key}) > 1)
    unsound = any(row["unsound_keys"] for row in rows.values())
    if args.json:
        print(json.dumps(rows, indent=1))
        return int(unsound)
    for solver, row in rows.items():
        print(f"{solver} ({row['kernel']}): {len(set(row['keys'].values()))} keys, "
              f"{len(set(row['module'].values()))} distinct modules"
              + (f", UNSOUND keys {row['unsound_keys']}" if row["unsound_keys"] else ""))
        for arch in ARCHS:
            print(f"  {arch:8s} key {row['keys'][arch]}  module {row['module'][arch]}")
    return int(unsound)


if __name__ == "__main__":
    sys.exit(main())
