"""Which targets make the same TTIR of a job (no GPU): the first sm90 dynamic job of each of a
few solvers compiled from source for every matrix-core arch of the default targets, the TTIR
text's digest per arch. Where archs whose TTIR keys (compiler/triton_ir.py `ir_key`) differ
print one digest, the key splits them by something that does not reach these kernels' TTIR;
where one key has two digests, it would share what it must not (UNSOUND, exit status 1).

    python bench/triton_ir_classes.py [--solvers A,B] [--json]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
from typing import Any

SOLVERS = ("ConvTritonImplicitGemmFwd", "ConvTritonDepthwiseFwd", "ConvTriton3dSmallCFwd",
           "ConvTritonPointwiseWrw", "ConvTriton3dWrw")
ARCHS = ("sm80", "sm86", "sm89", "sm90", "sm100", "sm120", "gfx908", "gfx90a", "gfx942",
         "gfx950", "gfx1100", "gfx1200")


def job_key(job: Any, arch: str) -> str | None:
    """The TTIR key (compiler/triton_ir.py `ir_key`) of `job` compiled for `arch` (DbId), as
    the builder's compile computes it."""
    from miopenkernels.compiler import kernels_dir
    from miopenkernels.compiler.triton import (
        TritonOptions,
        ast_source,
        every_option,
        gpu_target,
    )
    from miopenkernels.compiler.triton_ir import ir_key
    from miopenkernels.kernel_sources import kernel_source

    opts = TritonOptions(tuple(job.options))
    source = kernel_source(job.kernel_file, kernels_dir(None))
    return ir_key(ast_source(source, job.kernel_name, opts), gpu_target(arch),
                  dict(opts.compile), f"mma={opts.mma}", every_option(source, opts))


def ttir(job: Any, arch: str) -> str:
    """The TTIR text of `job` compiled from its source for `arch` (DbId)."""
    import triton
    from miopenkernels.compiler import kernels_dir
    from miopenkernels.compiler.triton import TritonOptions, ast_source, gpu_target
    from miopenkernels.kernel_sources import kernel_source

    opts = TritonOptions(tuple(job.options))
    src = ast_source(kernel_source(job.kernel_file, kernels_dir(None)), job.kernel_name, opts)
    with triton.knobs.cache.scope(), tempfile.TemporaryDirectory() as tmp:
        triton.knobs.cache.dir = tmp
        kernel = triton.compile(src, target=gpu_target(arch), options=dict(opts.compile))
    return kernel.asm["ttir"]


def digests(solver: str) -> dict[str, Any]:
    from miopenkernels.solvers import get_solver
    from miopenkernels.target import Target

    job = get_solver(solver).dynamic_jobs(Target("sm90", 132))[0]
    out: dict[str, Any] = {"kernel": job.kernel_name, "ttir": {}, "keys": {}}
    for arch in ARCHS:
        out["keys"][arch] = (job_key(job, arch) or "")[:8]
        out["ttir"][arch] = hashlib.sha256(ttir(job, arch).encode()).hexdigest()[:8]
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--solvers", default=",".join(SOLVERS))
    ap.add_argument("--json", action="store_true", help="print the rows as JSON")
    args = ap.parse_args(argv)
    rows = {s: digests(s) for s in args.solvers.split(",")}
    for row in rows.values():
        row["unsound_keys"] = sorted(key for key in set(row["keys"].values())
                                     if len({row["ttir"][a] for a in ARCHS
                                             if row["keys"][a] == key}) > 1)
    unsound = any(row["unsound_keys"] for row in rows.values())
    if args.json:
        print(json.dumps(rows, indent=1))
        return int(unsound)
    for solver, row in rows.items():
        print(f"{solver} ({row['kernel']}): {len(set(row['keys'].values()))} keys, "
              f"{len(set(row['ttir'].values()))} distinct TTIR"
              + (f", UNSOUND keys {row['unsound_keys']}" if row["unsound_keys"] else ""))
        for arch in ARCHS:
            print(f"  {arch:8s} key {row['keys'][arch]}  TTIR {row['ttir'][arch]}")
    return int(unsound)


if __name__ == "__main__":
    sys.exit(main())
