"""The host's share of a first call, without a GPU.

bench/serving.py's 414 shapes per type go through `Handle.find` and the first solution's invoker
and launch on the null backend (nothing runs, the reference computation is skipped), with the
built sm90-132 package in MIOPEN_SYSTEM_DB_PATH and an empty user database: what the runtime's
Python costs per first call on this host, apart from the GPU. Each type runs in a fresh process;
the repeats are further fresh processes. Printed per type: the medians over the shapes of find
and of invoker + launch (median over repeats), beside a fixed Python loop's time
(bench/_machine.py), so that a GPU host's serving figures can be put beside these.

    python bench/first_call_host.py --system-db DIR [--repeats 3] [--out FILE] [--json]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
TYPES = ("FP32", "FP16")


def child(dtype: str) -> dict:
    sys.path.insert(0, str(HERE))
    from miopenkernels.handle import Handle
    from miopenkernels.solvers import reference
    from serving import device_tensors, first_call, shapes

    reference.null_result = lambda *a: None  # time the runtime, not the reference convolution
    problems = shapes(dtype)
    handle = Handle(target="sm90-132")
    be = handle.backend
    size = 4 if dtype == "FP32" else 2
    xmax = max(math.prod(p.in_shape) for p in problems) * size
    wmax = max(math.prod(p.wei_shape) for p in problems) * size
    ymax = max(math.prod(p.out_shape) for p in problems) * size
    pool, ybuf = be.alloc(xmax + wmax), be.alloc(ymax)
    find_ms, run_ms, ranked = [], [], 0
    for p in problems:
        x, w, y = device_tensors(p, dtype, pool.ptr, xmax, ybuf.ptr)
        sols, t0, t1, t2 = first_call(handle, p, x, w, y)
        find_ms.append((t1 - t0) * 1e3)
        run_ms.append((t2 - t1) * 1e3)
        ranked += sols[0].source == "ranking"
    return {"shapes": len(problems), "ranked": ranked, "compiles": handle.stats.jit,
            "find_median_ms": statistics.median(find_ms),
            "run_median_ms": statistics.median(run_ms),
            "sum_median_ms": statistics.median(a + b for a, b in zip(find_ms, run_ms,
                                                                     strict=True))}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--system-db", type=Path, help="folder holding the built sm9084 package")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", type=Path, help="write the result as JSON here")
    ap.add_argument("--json", action="store_true", help="print the result as JSON")
    ap.add_argument("--child", choices=TYPES, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child)))
        return 0
    if args.system_db is None or not (args.system_db / "sm9084.kdb").is_file():
        print("first_call_host: --system-db must name a folder with the built sm9084.kdb",
              file=sys.stderr)
        return 2
    sys.path.insert(0, str(HERE))
    import miopenkernels
    from _machine import cpu_model, python_speed_ms

    result: dict = {"cpu": cpu_model(), "python": sys.version.split()[0],
                    "miopenkernels": miopenkernels.__version__,
                    "python_loop_ms": python_speed_ms(), "types": {}}
    for dtype in TYPES:
        runs = []
        for _ in range(max(1, args.repeats)):
            with tempfile.TemporaryDirectory() as user:
                env = {**os.environ, "MIOPEN_SYSTEM_DB_PATH": str(args.system_db.resolve()),
                       "MIOPEN_USER_DB_PATH": user, "MIOPEN_CUSTOM_CACHE_DIR": user,
                       "CUDA_VISIBLE_DEVICES": "", "HIP_VISIBLE_DEVICES": ""}  # null backend
                out = subprocess.run([sys.executable, __file__, "--child", dtype], env=env,
                                     capture_output=True, text=True, check=False)
            if out.returncode != 0:
                print(f"first_call_host: {dtype} child failed: {out.stderr.strip()[-400:]}",
                      file=sys.stderr)
                return 1
            runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
        result["types"][dtype] = {
            **{k: runs[0][k] for k in ("shapes", "ranked", "compiles")},
            **{k: round(statistics.median(r[k] for r in runs), 4)
               for k in ("find_median_ms", "run_median_ms", "sum_median_ms")},
            "repeats": len(runs)}
    result["load_after"] = os.getloadavg()[0]
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=1) + "\n")
    if args.json:
        print(json.dumps(result, indent=1))
        return 0
    print(f"Host share of a first call (null backend; {result['cpu']}, Python loop "
          f"{result['python_loop_ms']} ms), medians over the shapes, median of "
          f"{args.repeats} processes:")
    print("| type | shapes | ranked | compiles | find ms | invoker + launch ms | sum ms |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for dtype, r in result["types"].items():
        print(f"| {dtype} | {r['shapes']} | {r['ranked']} | {r['compiles']} | "
              f"{r['find_median_ms']:.3f} | {r['run_median_ms']:.3f} | {r['sum_median_ms']:.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
