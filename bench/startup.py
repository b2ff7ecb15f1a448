"""Start-up without a GPU: the runtime's own cost against `import numpy`.

In a fresh process (null backend, the built sm90-132 package in MIOPEN_SYSTEM_DB_PATH, a new
empty user db folder): time `import miopenkernels.handle`, `Handle(target="sm90-132")` and the
first solution's invoker of one ResNet-50 layer (its kernel loaded from the package's kdb), each
phase apart; then `import numpy` in that interpreter (after the runtime: it finds the standard
library modules the runtime imported already loaded). The yardstick is `import numpy` alone in
a fresh interpreter of the same Python and environment, run alternately with the runtime's
processes. Two layers: one with a FindDb record (batch 32) and one without (batch 3, the miss
ranking). Bytecode is compiled before timing (one untimed process per case, as an installer
compiles it) and the children run with it; PYTHONDONTWRITEBYTECODE is left out of their
environment. The bar: the runtime's three phases under half of numpy's import. Medians over
`--repeats` processes (and the fastest of each, as numpy's import is often bimodal on a shared
machine); the load average before and after is recorded.

    python bench/startup.py --system-db DIR --out bench/results/startup_null
"""

from __future__ import annotations

import time

T0 = time.perf_counter()  # noqa: E402 - before any import

import argparse  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import platform  # noqa: E402
import shutil  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402

HERE = Path(__file__).resolve().parent
CASES = {"record": 32, "miss": 3}
PHASES = ("import_ms", "handle_ms", "invoker_ms", "runtime_ms", "numpy_after_ms")


def child(batch: int) -> dict:
    preloaded = len(sys.modules)
    t0 = time.perf_counter()
    from miopenkernels.handle import Handle
    from miopenkernels.problem import ConvProblem

    t_import = time.perf_counter()
    imported = len(sys.modules) - preloaded
    handle = Handle(target="sm90-132")
    t_handle = time.perf_counter()
    problem = ConvProblem(n=batch, c=64, k=64, in_spatial=(56, 56), filter=(3, 3), pad=(1, 1))
    sols = handle.solutions(problem)
    inv = handle.compile_solution(problem, sols[0])
    t_invoker = time.perf_counter()
    numpy_before = "numpy" in sys.modules
    runtime_modules = len(sys.modules) - preloaded
    bytecode = all(os.path.exists(m.__cached__) for name, m in list(sys.modules.items())
                   if name.startswith("miopenkernels") and getattr(m, "__cached__", None))
    import numpy  # noqa: F401

    t_numpy = time.perf_counter()
    return {"import_ms": (t_import - t0) * 1e3, "handle_ms": (t_handle - t_import) * 1e3,
            "invoker_ms": (t_invoker - t_handle) * 1e3, "runtime_ms": (t_invoker - t0) * 1e3,
            "numpy_after_ms": (t_numpy - t_invoker) * 1e3, "numpy_imported_before": numpy_before,
            "preloaded_modules": preloaded, "modules_on_import": imported,
            "modules_by_invoker": runtime_modules, "bytecode": bytecode,
            "solver": sols[0].solver, "source": sols[0].source, "specialised": inv.specialised,
            "kernels": handle.stats.to_dict(), "backend": handle.backend.name}


def numpy_child() -> dict:
    preloaded = len(sys.modules)
    t0 = time.perf_counter()
    import numpy

    return {"numpy_ms": (time.perf_counter() - t0) * 1e3, "preloaded_modules": preloaded,
            "numpy": numpy.__version__}


def _run(args: list[str], env: dict[str, str]) -> dict:
    proc = subprocess.run([sys.executable, str(Path(__file__).resolve()), *args], env=env,
                          capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(args)}: {proc.stderr.strip()[-1000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--child", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--numpy-child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--system-db", type=Path, help="folder holding the built sm9084 package")
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--out", type=Path, default=HERE / "results" / "startup_null")
    ap.add_argument("--json", action="store_true", help="print the summary as JSON")
    args = ap.parse_args()
    if args.child is not None:
        print(json.dumps(child(args.child)))
        return 0
    if args.numpy_child:
        print(json.dumps(numpy_child()))
        return 0
    if args.system_db is None or not (args.system_db / "sm9084.kdb").is_file():
        print("error: --system-db must name a folder holding sm9084.kdb (a built sm90-132 "
              "package); build it with `miopenkernels build --targets sm90-132`", file=sys.stderr)
        return 2
    sys.path.insert(0, str(HERE))
    from _machine import cpu_model

    base = {k: v for k, v in os.environ.items()
            if not k.startswith("MIOPEN_") and k != "PYTHONDONTWRITEBYTECODE"}
    env = {**base, "MIOPEN_SYSTEM_DB_PATH": str(args.system_db),
           "CUDA_VISIBLE_DEVICES": "", "HIP_VISIBLE_DEVICES": ""}
    load_before = os.getloadavg()
    results: dict[str, list[dict]] = {case: [] for case in CASES}
    numpy_runs: list[dict] = []
    try:
        for batch in CASES.values():  # untimed: compiles the bytecode
            with tempfile.TemporaryDirectory(prefix="startup") as user:
                _run(["--child", str(batch)], {**env, "MIOPEN_USER_DB_PATH": user,
                                               "MIOPEN_CUSTOM_CACHE_DIR": user})
        _run(["--numpy-child"], env)
        for _ in range(args.repeats):
            for case, batch in CASES.items():
                user = tempfile.mkdtemp(prefix="startup")
                try:
                    results[case].append(_run(["--child", str(batch)], {
                        **env, "MIOPEN_USER_DB_PATH": user, "MIOPEN_CUSTOM_CACHE_DIR": user}))
                finally:
                    shutil.rmtree(user, ignore_errors=True)
                numpy_runs.append(_run(["--numpy-child"], env))
    except RuntimeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    load_after = os.getloadavg()
    numpy_ms = round(statistics.median(r["numpy_ms"] for r in numpy_runs), 3)
    summary: dict[str, dict] = {}
    for case, runs in results.items():
        med: dict = {k: round(statistics.median(r[k] for r in runs), 3) for k in PHASES}
        med["numpy_ms"] = numpy_ms
        med["ratio"] = round(med["runtime_ms"] / numpy_ms, 3)
        # numpy's import is often bimodal on a shared machine: the fastest of each says how
        # the two compare when neither waits.
        med["runtime_min_ms"] = round(min(r["runtime_ms"] for r in runs), 3)
        med["numpy_min_ms"] = round(min(r["numpy_ms"] for r in numpy_runs), 3)
        med["ratio_min"] = round(med["runtime_min_ms"] / med["numpy_min_ms"], 3)
        med["ratio_after"] = round(statistics.median(
            r["runtime_ms"] / r["numpy_after_ms"] for r in runs), 3)
        med["modules_on_import"] = max(r["modules_on_import"] for r in runs)
        med["modules_by_invoker"] = max(r["modules_by_invoker"] for r in runs)
        med["bytecode"] = all(r["bytecode"] for r in runs)
        med["numpy_imported_before"] = any(r["numpy_imported_before"] for r in runs)
        med["jit"] = max(r["kernels"]["jit"] for r in runs)
        med["solver"] = runs[0]["solver"]
        med["source"] = runs[0]["source"]
        summary[case] = med
    import miopenkernels

    build = args.system_db / "sm9084.build.json"
    package = {"kdb_bytes": (args.system_db / "sm9084.kdb").stat().st_size,
               "finddb_lines": sum(1 for _ in (args.system_db / "sm9084.HIP.fdb.txt").open())
               if (args.system_db / "sm9084.HIP.fdb.txt").is_file() else 0,
               "manifests": json.loads(build.read_text()).get("manifests")
               if build.is_file() else None}
    out = {"machine": platform.machine(), "cpu": cpu_model(), "cpus": os.cpu_count(),
           "python": sys.version.split()[0], "numpy": numpy_runs[0]["numpy"],
           "miopenkernels": miopenkernels.__version__,
           "editable_install": "site-packages" not in (miopenkernels.__file__ or ""),
           "load_average_before": [round(x, 2) for x in load_before],
           "load_average_after": [round(x, 2) for x in load_after],
           "preloaded_modules": numpy_runs[0]["preloaded_modules"],
           "package": package, "repeats": args.repeats, "method": __doc__.split("\n\n")[1],
           "summary": summary,
           "numpy_runs": numpy_runs, "runs": results}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    Path(str(args.out) + ".json").write_text(json.dumps(out, indent=1) + "\n")
    lines = [f"Start-up without a GPU ({out['cpus']} CPUs, {out['cpu']}, Python "
             f"{out['python']}, numpy {out['numpy']}, load {load_before[0]:.2f} before / "
             f"{load_after[0]:.2f} after): ms, median of {args.repeats} processes each; "
             "ratio = runtime / `import numpy` in a fresh interpreter (bar: < 0.5); fastest = "
             "the fastest process of each (runtime / numpy); after = `import numpy` in the "
             "runtime's interpreter afterwards.", "",
             "| layer | import handle | Handle() | first invoker | runtime | import numpy | "
             "ratio | fastest | numpy after | solution | JIT |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for case, s in summary.items():
        lines.append(f"| {case} | {s['import_ms']:.1f} | {s['handle_ms']:.1f} | "
                     f"{s['invoker_ms']:.1f} | {s['runtime_ms']:.1f} | {s['numpy_ms']:.1f} | "
                     f"{s['ratio']:.2f} | {s['runtime_min_ms']:.1f} / {s['numpy_min_ms']:.1f} "
                     f"= {s['ratio_min']:.2f} | {s['numpy_after_ms']:.1f} | "
                     f"{s['solver']} ({s['source']}) | {s['jit']} |")
    Path(str(args.out) + ".md").write_text("\n".join(lines) + "\n")
    print(json.dumps(summary) if args.json else "\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
