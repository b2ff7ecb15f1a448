"""Start-up without a GPU: the runtime's own cost against `import numpy`, in one interpreter.

In a fresh process (null backend, the built sm90-132 package in MIOPEN_SYSTEM_DB_PATH): time
`import miopenkernels.handle`, `Handle(target="sm90-132")` and the first solution's invoker of
one ResNet-50 layer (its kernel loaded from the package's kdb), then `import numpy` in the same
interpreter. Two layers: one with a FindDb record (batch 32) and one without (batch 3, the miss
ranking). The bar: the runtime's part under half of numpy's import. Medians over `--repeats`
processes.

    python bench/startup.py --system-db DIR --out bench/results/startup_null
"""

from __future__ import annotations

import time

T0 = time.perf_counter()  # noqa: E402 - before any import

import argparse  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402

HERE = Path(__file__).resolve().parent
CASES = {"record": 32, "miss": 3}


def child(batch: int) -> dict:
    t0 = time.perf_counter()
    from miopenkernels.handle import Handle
    from miopenkernels.problem import ConvProblem

    t_import = time.perf_counter()
    handle = Handle(target="sm90-132")
    t_handle = time.perf_counter()
    problem = ConvProblem(n=batch, c=64, k=64, in_spatial=(56, 56), filter=(3, 3), pad=(1, 1))
    sols = handle.solutions(problem)
    inv = handle.compile_solution(problem, sols[0])
    t_invoker = time.perf_counter()
    numpy_before = "numpy" in sys.modules
    import numpy  # noqa: F401

    t_numpy = time.perf_counter()
    return {"import_ms": (t_import - t0) * 1e3, "handle_ms": (t_handle - t_import) * 1e3,
            "invoker_ms": (t_invoker - t_handle) * 1e3, "runtime_ms": (t_invoker - t0) * 1e3,
            "numpy_ms": (t_numpy - t_invoker) * 1e3, "numpy_imported_before": numpy_before,
            "solver": sols[0].solver, "source": sols[0].source, "specialised": inv.specialised,
            "kernels": handle.stats.to_dict(), "backend": handle.backend.name}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--child", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--system-db", type=Path, help="folder holding the built sm9084 package")
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--out", type=Path, default=HERE / "results" / "startup_null")
    ap.add_argument("--json", action="store_true", help="print the summary as JSON")
    args = ap.parse_args()
    if args.child is not None:
        print(json.dumps(child(args.child)))
        return 0
    if args.system_db is None or not (args.system_db / "sm9084.kdb").is_file():
        print("error: --system-db must name a folder holding sm9084.kdb (a built sm90-132 "
              "package); build it with `miopenkernels build --targets sm90-132`", file=sys.stderr)
        return 2
    base = {k: v for k, v in os.environ.items() if not k.startswith("MIOPEN_")}
    env = {**base, "MIOPEN_SYSTEM_DB_PATH": str(args.system_db),
           "CUDA_VISIBLE_DEVICES": "", "HIP_VISIBLE_DEVICES": ""}
    results: dict[str, list[dict]] = {}
    for case, batch in CASES.items():
        runs = []
        for _ in range(args.repeats):
            user = tempfile.mkdtemp(prefix="startup")
            proc = subprocess.run(
                [sys.executable, str(Path(__file__).resolve()), "--child", str(batch)],
                env={**env, "MIOPEN_USER_DB_PATH": user, "MIOPEN_CUSTOM_CACHE_DIR": user},
                capture_output=True, text=True, timeout=300)
            if proc.returncode != 0:
                print(f"error: {case}: {proc.stderr.strip()[-1000:]}", file=sys.stderr)
                return 1
            runs.append(json.loads(proc.stdout.strip().splitlines()[-1]))
        results[case] = runs
    summary = {}
    for case, runs in results.items():
        med = {k: round(statistics.median(r[k] for r in runs), 3)
               for k in ("import_ms", "handle_ms", "invoker_ms", "runtime_ms", "numpy_ms")}
        med["ratio"] = round(statistics.median(r["runtime_ms"] / r["numpy_ms"] for r in runs), 3)
        med["numpy_imported_before"] = any(r["numpy_imported_before"] for r in runs)
        med["jit"] = max(r["kernels"]["jit"] for r in runs)
        med["solver"] = runs[0]["solver"]
        med["source"] = runs[0]["source"]
        summary[case] = med
    import miopenkernels

    out = {"machine": platform.machine(), "cpus": os.cpu_count(),
           "python": sys.version.split()[0], "miopenkernels": miopenkernels.__version__,
           "repeats": args.repeats, "method": __doc__.split("\n\n")[1], "summary": summary,
           "runs": results}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    Path(str(args.out) + ".json").write_text(json.dumps(out, indent=1) + "\n")
    lines = [f"Start-up without a GPU ({out['cpus']} CPUs, Python {out['python']}): ms, median "
             f"of {args.repeats} processes; ratio = runtime / `import numpy` (bar: < 0.5).", "",
             "| layer | import handle | Handle() | first invoker | runtime | import numpy | "
             "ratio | solution | JIT |", "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for case, s in summary.items():
        lines.append(f"| {case} | {s['import_ms']:.1f} | {s['handle_ms']:.1f} | "
                     f"{s['invoker_ms']:.1f} | {s['runtime_ms']:.1f} | {s['numpy_ms']:.1f} | "
                     f"{s['ratio']:.2f} | {s['solver']} ({s['source']}) | {s['jit']} |")
    Path(str(args.out) + ".md").write_text("\n".join(lines) + "\n")
    print(json.dumps(summary) if args.json else "\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
