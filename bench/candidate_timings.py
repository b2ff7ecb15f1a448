"""Time every candidate the miss ranking can choose, on layers of the other networks at small
batch sizes; the result is a tuning log that the ranking's fit reads.

The tuning runs measure the manifests' problems at their own batch sizes (32 to 128), so the
fit has few timings of small launches, where a small tensor-core tile beats the portable GEMMs
that the model then prefers. This script fills that gap with measurements of problems outside
the serving benchmark: the forward layers of every shipped manifest except ResNet-50 (the
serving benchmark's network, whose regret must stay a figure on layers the ranking was not
fitted on), in NCHW, FP32 and FP16, at batch 1, 2, 4, 8 and 16. For each problem and each
applicable solver, every parameter set the ranking knows (the model's list, the defaults, the
PerfDb's) whose kernel the installed package holds is launched once for warm-up and timed
`--repeats` times between device events; the median is written. A time budget bounds the run;
problems not reached are listed.

    python bench/candidate_timings.py --system-db DIR --out bench/results/tune_sm9084/small_batch

writes OUT.tune.json.gz (the tuning log's schema: target, device, driver, timings) and prints
a summary table; `--json` prints the summary as JSON.
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import os
import statistics
import sys
import time
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path

HERE = Path(__file__).resolve().parent
NETWORKS = ("vgg16", "inception_v3", "mobilenet_v2", "unet")
BATCHES = (1, 2, 4, 8, 16)
TYPES = ("FP32", "FP16")


def problems(networks: tuple[str, ...] = NETWORKS, batches: tuple[int, ...] = BATCHES,
             types: tuple[str, ...] = TYPES, layouts: tuple[str, ...] = ("NCHW",)) -> list:
    """Distinct forward layers of `networks`, per batch size, layout and type."""
    from miopenkernels.builder.manifest import load_manifest

    layers = {}
    for net in networks:
        for p in load_manifest(net):
            if p.direction != "F" or p.mode != "conv" or p.spatial_dim != 2:
                continue
            layer = replace(p, n=1, in_layout="NCHW", wei_layout="NCHW", out_layout="NCHW",
                            in_type="FP32", wei_type="FP32", out_type="FP32")
            layers[layer.key()] = layer
    out = []  # smallest batches first: a budget cut keeps them
    for batch in batches:
        for layout in layouts:
            for dtype in types:
                for layer in layers.values():
                    out.append(replace(layer, n=batch, in_type=dtype, wei_type=dtype,
                                       out_type=dtype, in_layout=layout, wei_layout=layout,
                                       out_layout=layout))
    return out


def candidates(handle, model, problem) -> list:  # noqa: ANN001
    """(solver, params) pairs whose kernels the package holds, without repeats."""
    out = []
    for solver in handle.applicable_solvers(problem):
        sets = [tuple(solver.default_params(problem, handle.target)),
                tuple(handle.params_for(problem, solver))]
        for text in model.params.get(solver.name, ()):
            try:
                sets.append(tuple(solver.params_from_string(text)))
            except Exception:  # noqa: BLE001 - a set this solver cannot read is no candidate
                continue
        seen = set()
        for params in sets:
            if params in seen:
                continue
            seen.add(params)
            if solver.tunable and not solver.params_valid(problem, handle.target, params):
                continue
            job = solver.compile_job(problem, params, handle.target, specialised=False)
            if handle.kernel_at_hand(job):
                out.append((solver, params))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--system-db", type=Path, required=True,
                    help="folder of the installed package's kdb and databases")
    ap.add_argument("--out", type=Path, required=True, help="output path without suffix")
    ap.add_argument("--repeats", type=int, default=5, help="timed launches per candidate")
    ap.add_argument("--budget-s", type=float, default=150.0, help="stop after this long")
    ap.add_argument("--networks", default=",".join(NETWORKS),
                    help="manifests whose forward layers are timed (comma-separated)")
    ap.add_argument("--batches", default=",".join(map(str, BATCHES)), help="batch sizes")
    ap.add_argument("--types", default=",".join(TYPES), help="element types (FP32, FP16, BF16)")
    ap.add_argument("--layouts", default="NCHW", help="NCHW, NHWC or both (comma-separated)")
    ap.add_argument("--math", choices=("IEEE", "TF32"), default="IEEE",
                    help="how FP32 multiplies (MIOPENKERNELS_FP32_MATH)")
    ap.add_argument("--json", action="store_true", help="print the summary as JSON")
    args = ap.parse_args()
    os.environ["MIOPEN_SYSTEM_DB_PATH"] = str(args.system_db)
    os.environ["MIOPENKERNELS_FP32_MATH"] = args.math
    networks = tuple(args.networks.split(","))
    batches = tuple(int(b) for b in args.batches.split(","))
    types = tuple(args.types.split(","))
    layouts = tuple(args.layouts.split(","))
    import numpy as np
    from miopenkernels.errors import NoDeviceError
    from miopenkernels.find import make_invoker
    from miopenkernels.handle import Handle
    from miopenkernels.invoke import workspace_ptr
    from miopenkernels.ranking import load_model

    try:
        handle = Handle()
    except NoDeviceError as exc:
        print(f"candidate_timings: {exc}", file=sys.stderr)
        return 6
    be = handle.backend
    if not be.has_timer:
        print("candidate_timings: no GPU timer on this machine (null backend); run it on the "
              "GPU machine", file=sys.stderr)
        return 6
    model = load_model()
    todo = problems(networks, batches, types, layouts)
    biggest = max(max(math.prod(p.in_shape), math.prod(p.wei_shape), math.prod(p.out_shape))
                  for p in todo) * 4
    rng = np.random.default_rng(0)
    ptrs_of = {}
    for dtype, np_type in (("FP32", np.float32), ("FP16", np.float16)):
        ptrs = {"workspace": 0}
        for role in ("x", "w", "y"):
            host = (rng.random(biggest // 4, dtype=np.float32) - 0.5).astype(np_type)
            buf = be.alloc(host.nbytes)
            be.copy_in(buf, host)
            ptrs[role] = buf.ptr
        ptrs_of[dtype] = ptrs
    be.synchronize()
    timings, reached, failed = [], 0, 0
    start = time.perf_counter()
    for i, p in enumerate(todo):
        if time.perf_counter() - start > args.budget_s:
            break
        reached += 1
        ptrs = ptrs_of[p.in_type]
        for solver, params in candidates(handle, model, p):
            entry = {"solver": solver.name, "key": p.key(),
                     "params": solver.params_to_string(params)}
            try:
                inv = make_invoker(handle, p, solver, params=params, specialised=False)
                q_ptrs = {**ptrs, "workspace": workspace_ptr(be, inv)}
                times = be.time_kernel(lambda c=inv, q=q_ptrs: c(q), args.repeats, 1)
                entry["time_ms"] = float(statistics.median(times))
            except Exception as exc:  # noqa: BLE001 - a failing candidate is logged, not fatal
                entry["time_ms"] = None
                entry["error"] = str(exc).splitlines()[0][:300]
                failed += 1
            timings.append(entry)
        if i % 100 == 0:
            print(f"[{time.perf_counter() - start:6.1f} s] {i}/{len(todo)} problems, "
                  f"{len(timings)} timings", flush=True)
    seconds = time.perf_counter() - start
    log = {"basename": handle.target.name, "target": handle.target.name,
           "device": be.device_name, "backend": be.name,
           "driver": getattr(be, "driver_version", ""),
           "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
           "networks": list(networks), "batches": list(batches), "types": list(types),
           "layouts": list(layouts), "math": args.math, "timer": "queued behind a spin kernel",
           "summary": {"problems": len(todo), "reached": reached, "timings": len(timings),
                       "failed": failed, "seconds": round(seconds, 1)},
           "not_reached": [p.key() for p in todo[reached:]],
           "timings": timings}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    path = args.out.with_name(args.out.name + ".tune.json.gz")
    with gzip.open(path, "wt") as fh:
        json.dump(log, fh)
    summary = {**log["summary"], "device": log["device"], "file": str(path)}
    if args.json:
        print(json.dumps(summary))
    else:
        print("| problems | reached | timings | failed | seconds | device |")
        print("| --- | --- | --- | --- | --- | --- |")
        print(f"| {len(todo)} | {reached} | {len(timings)} | {failed} | {seconds:.1f} | "
              f"{log['device']} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
