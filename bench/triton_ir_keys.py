"""How much Triton IR the main job's Triton objects share (no GPU, no object compiled): every
Triton job of the default targets from the default manifest (`build_jobs`, as the builder
plans them), the key its compile finds its code-generator module under (compiler/triton_ir.py
`share_key`: the jobs of one key are compiled from one module, the code generator run once)
and, per kernel, the jobs and the keys. Whether a module has a dot is read from the module,
made once for each job key (`ir_key`) by the code generator alone: a few minutes.

    python bench/triton_ir_keys.py [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter, defaultdict
from typing import Any


def count() -> dict[str, Any]:
    from miopenkernels.builder.jobs import build_jobs
    from miopenkernels.builder.manifest import load_manifests
    from miopenkernels.compiler import TRITON, job_compiler, kernels_dir, triton_arch
    from miopenkernels.compiler.triton import (
        TritonOptions,
        ast_source,
        every_option,
        gpu_target,
    )
    from miopenkernels.compiler.triton_ir import (
        dot_stage,
        has_dot,
        ir_key,
        module_text,
        share_key,
    )
    from miopenkernels.kernel_sources import kernel_source
    from miopenkernels.target import select_targets

    plan = build_jobs(select_targets(None), load_manifests(None))
    jobs = list(dict.fromkeys(j for target_jobs in plan.values() for j in target_jobs))
    root = kernels_dir(None)
    keys: set[str] = set()
    per_kernel: Counter[str] = Counter()
    kernel_keys: defaultdict[str, set[str]] = defaultdict(set)
    modules: dict[str, str] = {}  # job key -> a module of it ("" where it has no dot)
    for job in jobs:
        if job_compiler(job) is not TRITON:
            continue
        opts = TritonOptions(tuple(job.options))
        source = kernel_source(job.kernel_file, root)
        src = ast_source(source, job.kernel_name, opts)
        target, options = gpu_target(triton_arch(job.target)), dict(opts.compile)
        key = ir_key(src, target, options, f"mma={opts.mma}", every_option(source, opts))
        if key is None:
            key = repr(job)
        else:
            if key not in modules:
                text = module_text(src, target, options)
                modules[key] = text if has_dot(text) else ""
            key = share_key(key, dot_stage(target, options), modules[key])
        keys.add(key)
        per_kernel[job.kernel_name] += 1
        kernel_keys[job.kernel_name].add(key)
    return {"jobs": sum(per_kernel.values()), "keys": len(keys),
            "kernels": {k: {"jobs": n, "keys": len(kernel_keys[k])}
                        for k, n in per_kernel.most_common()}}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", action="store_true", help="print the result as JSON")
    args = ap.parse_args(argv)
    result = count()
    if args.json:
        print(json.dumps(result, indent=1))
        return 0
    print(f"{result['jobs']} Triton jobs (a target's each), {result['keys']} module keys")
    print("| kernel | jobs | module keys |")
    print("| --- | --- | --- |")
    for name, c in result["kernels"].items():
        print(f"| {name} | {c['jobs']} | {c['keys']} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
