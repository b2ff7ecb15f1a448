"""Serving: the first call of shapes no database holds, against cuDNN.

The 23 distinct ResNet-50 forward convolutions (NCHW) at batch 1, 2, 3, 4, 8, 16, 24, 32, 64 and
at 224x224 and 320x320 input (every spatial size scaled by 320/224): 414 shapes per type, FP32
and FP16. One fresh process per (engine, type) goes through the shapes in order; inputs live on
the device before any timing, the output buffer is allocated once.

Per shape:
- miopenkernels (installed package, default find mode): the first call (`handle.find`, plus the
  launch of its first solution when find only ranked, synchronised), the kernels compiled during
  it, the solver chosen and where the choice came from (FindDb record or miss ranking);
  then the chosen solution's steady-state time, and the best steady-state time over every
  (solver, parameters) whose kernel the package holds, found by benchmarking each: the regret is
  chosen / best - 1 (what benchmarking the installed package would have gained; a candidate
  whose first launch takes over 3x the best so far is not timed further);
- torch_heuristics (cudnn.benchmark off) and torch_benchmark (on): first call (conv2d plus
  synchronise) and steady-state time. FP32 convolutions run without TF32 (allow_tf32 off) so that
  both engines compute in FP32.
Steady state: median of 20 device-event timings after 3 warm-up launches. The best-at-hand
sweep has a time budget (BEST_BUDGET_S); `regret_shapes` says how many shapes it reached. The
first call is also reported in phases (find, run, the wait for the kernel, and the garbage
collector's pauses inside it); SERVING_PROFILE=FILE
writes a cProfile report of the first calls to FILE_<type>.txt.

    python bench/serving.py --system-db DIR --out bench/results/serving_h100
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
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
BATCHES = (1, 2, 3, 4, 8, 16, 24, 32, 64)
SIZES = (224, 320)
ENGINES = ("miopenkernels", "torch_heuristics", "torch_benchmark")
STEADY = 20
BEST_BUDGET_S = 60  # the best-at-hand sweep stops here; later shapes have no regret


def device_tensors(p: Any, dtype: str, base: int, xmax: int, ybase: int) -> tuple:
    """x and w of problem `p` at `base` and `base + xmax`, y at `ybase` (buffers made once,
    outside the timed region)."""
    from miopenkernels.tensor import DeviceTensor

    size = 4 if dtype == "FP32" else 2
    return (DeviceTensor(base, math.prod(p.in_shape) * size, dtype, p.in_shape),
            DeviceTensor(base + xmax, math.prod(p.wei_shape) * size, dtype, p.wei_shape),
            DeviceTensor(ybase, math.prod(p.out_shape) * size, dtype, p.out_shape))


def first_call(handle: Any, p: Any, x: Any, w: Any, y: Any) -> tuple[list, float, float, float]:
    """One first call as timed here: `handle.find`, then the launch of its first solution when
    find only ranked (a benchmarking find has run it). (solutions, start, after find, after
    the launch), perf_counter seconds; the caller synchronises."""
    t0 = time.perf_counter()
    sols = handle.find(p, x, w, y)
    t1 = time.perf_counter()
    if sols[0].source != "find":
        handle.run(p, sols[0], x, w, y)
    return sols, t0, t1, time.perf_counter()


def shapes(dtype: str) -> list:
    sys.path.insert(0, str(HERE))
    from _layers import resnet50_layers

    out = []
    for size in SIZES:
        for batch in BATCHES:
            for p in resnet50_layers(dtype, batch):
                spatial = tuple(s * size // 224 for s in p.in_spatial)
                out.append(replace(p, in_spatial=spatial))
    return out


def _pct(values: list[float], q: float) -> float:
    if not values:
        return math.nan
    s = sorted(values)
    k = (len(s) - 1) * q / 100
    lo, hi = math.floor(k), math.ceil(k)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


# ----------------------------------------------------------------------------- children
def child_miopenkernels(dtype: str, best: bool) -> dict:
    import numpy as np
    from miopenkernels.find import make_invoker, solver_of
    from miopenkernels.handle import Handle
    from miopenkernels.invoke import workspace_ptr
    from miopenkernels.problem import TYPE_BYTES
    from miopenkernels.ranking import load_model

    problems = shapes(dtype)
    handle = Handle()
    be = handle.backend
    size = TYPE_BYTES[dtype]
    xmax = max(math.prod(p.in_shape) for p in problems) * size
    wmax = max(math.prod(p.wei_shape) for p in problems) * size
    ymax = max(math.prod(p.out_shape) for p in problems) * size
    rng = np.random.default_rng(0)
    host = (rng.random((xmax + wmax) // size + 1, dtype=np.float32) - 0.5).astype(
        np.float16 if dtype == "FP16" else np.float32)  # x then w, each at most xmax, wmax
    pool = be.alloc(host.nbytes)
    be.copy_in(pool, host)
    ybuf = be.alloc(ymax)
    be.synchronize()
    rows = []
    import gc

    gc_state = {"start": 0.0, "ms": 0.0}

    def gc_timer(phase: str, info: dict) -> None:  # the garbage collector's pauses
        if phase == "start":
            gc_state["start"] = time.perf_counter()
        else:
            gc_state["ms"] += (time.perf_counter() - gc_state["start"]) * 1e3

    gc.callbacks.append(gc_timer)
    profile = os.environ.get("SERVING_PROFILE")  # a file: cProfile of the first calls
    if profile:
        import cProfile

        profiler = cProfile.Profile()
        profiler.enable()
    for p in problems:
        x, w, y = device_tensors(p, dtype, pool.ptr, xmax, ybuf.ptr)
        jit = handle.stats.jit
        gc_state["ms"] = 0.0
        sols, t0, t1, t2 = first_call(handle, p, x, w, y)
        be.synchronize()
        t3 = time.perf_counter()
        first_ms = (t3 - t0) * 1e3
        rows.append({"key": p.key(), "n": p.n, "size": p.in_spatial[0],
                     "first_call_ms": first_ms, "find_ms": (t1 - t0) * 1e3,
                     "run_ms": (t2 - t1) * 1e3, "sync_ms": (t3 - t2) * 1e3,
                     "gc_ms": gc_state["ms"],
                     "compiles": handle.stats.jit - jit,
                     "solver": sols[0].solver, "source": sols[0].source,
                     "params": list(handle.invokers[(p, sols[0].solver)].params)})
    gc.callbacks.remove(gc_timer)
    if profile:
        import io
        import pstats

        profiler.disable()
        text = io.StringIO()
        for order in ("tottime", "cumulative"):
            pstats.Stats(profiler, stream=text).sort_stats(order).print_stats(35)
        Path(f"{profile}_{dtype}.txt").write_text(text.getvalue())
    # Steady state of the chosen solutions, then the best the package holds.
    model = load_model()
    deadline = time.perf_counter() + BEST_BUDGET_S
    for row, p in zip(rows, problems, strict=True):
        ptrs = {"x": pool.ptr, "w": pool.ptr + xmax, "y": ybuf.ptr}
        inv = handle.invokers[(p, row["solver"])]
        ptrs["workspace"] = workspace_ptr(be, inv)
        row["steady_ms"] = _steady(be, inv, ptrs)
        if not best or time.perf_counter() > deadline:
            continue
        best_ms, best_what = row["steady_ms"], f"{row['solver']}({row['params']})"
        for solver in handle.applicable_solvers(p):
            for params in model.candidate_params(solver, p, handle.target):
                if solver.tunable and not solver.params_valid(p, handle.target, params):
                    continue
                job = solver.compile_job(p, params, handle.target, specialised=False)
                if not handle.has_kernel(job):
                    continue
                try:
                    cand = make_invoker(handle, p, solver_of(handle, solver.name),
                                        params=params, specialised=False)
                    q_ptrs = {**ptrs, "workspace": workspace_ptr(be, cand)}
                    once = float(be.time_ms(lambda c=cand, q=q_ptrs: c(q), 1)[0])
                    if once > 3 * best_ms:  # far behind: no need to time it closely
                        continue
                    ms = _steady(be, cand, q_ptrs, repeats=5)
                except Exception as exc:  # noqa: BLE001 - a failing candidate is no best
                    print(f"{p.key()} {solver.name} {params}: {exc}", file=sys.stderr)
                    continue
                if ms < best_ms:
                    best_ms, best_what = ms, f"{solver.name}({list(params)})"
        row["best_ms"] = best_ms
        row["best"] = best_what
        row["regret"] = row["steady_ms"] / best_ms - 1
    return {"rows": rows, "device": be.device_name, "kernels": handle.stats.to_dict(),
            "driver": getattr(be, "driver_version", "")}


def _steady(be, inv, ptrs: dict, repeats: int = STEADY) -> float:  # noqa: ANN001
    for _ in range(3):
        inv(ptrs)
    return float(statistics.median(be.time_ms(lambda: inv(ptrs), repeats)))


def child_torch(dtype: str, benchmark: bool) -> dict:
    import torch

    torch.backends.cudnn.benchmark = benchmark
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    tdt = torch.float16 if dtype == "FP16" else torch.float32
    problems = shapes(dtype)
    xmax = max(math.prod(p.in_shape) for p in problems)
    wmax = max(math.prod(p.wei_shape) for p in problems)
    xs = torch.randn(xmax, device="cuda", dtype=tdt)
    ws = torch.randn(wmax, device="cuda", dtype=tdt)
    torch.cuda.synchronize()
    rows = []
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for p in problems:
        x = xs[: math.prod(p.in_shape)].view(p.in_shape)
        w = ws[: math.prod(p.wei_shape)].view(p.wei_shape)

        def conv(x=x, w=w, p=p):  # noqa: ANN001, ANN202
            return torch.nn.functional.conv2d(x, w, None, p.stride, p.pad, p.dilation, p.groups)

        t0 = time.perf_counter()
        conv()
        torch.cuda.synchronize()
        first_ms = (time.perf_counter() - t0) * 1e3
        for _ in range(3):
            conv()
        times = []
        for _ in range(STEADY):
            start.record()
            conv()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end))
        rows.append({"key": p.key(), "first_call_ms": first_ms,
                     "steady_ms": float(statistics.median(times))})
    return {"rows": rows, "device": torch.cuda.get_device_name(), "torch": torch.__version__,
            "cudnn": torch.backends.cudnn.version()}


# ----------------------------------------------------------------------------- parent
CHILD_TIMEOUT_S = {"miopenkernels": 110, "torch_heuristics": 25, "torch_benchmark": 35}


def run_child(engine: str, dtype: str, env: dict[str, str], best: bool) -> dict:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", engine, "--dtype", dtype]
    if not best:
        cmd.append("--no-best")
    try:
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True,
                              timeout=CHILD_TIMEOUT_S[engine])
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {CHILD_TIMEOUT_S[engine]} s"}
    if proc.returncode != 0:
        return {"error": proc.stderr.strip()[-3000:]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _median_of(rows: list[dict], name: str) -> float | None:
    values = [r[name] for r in rows if name in r]
    return round(statistics.median(values), 4) if values else None


def summarise(mk: dict, torch_h: dict, torch_b: dict) -> dict:
    rows = mk.get("rows", [])
    if not rows:
        return {"error": mk.get("error", "")[-500:]}
    firsts = [r["first_call_ms"] for r in rows]
    unfitted = [r for r in rows if r["source"] != "finddb" and "regret" in r]
    regrets = [max(0.0, r["regret"]) for r in unfitted]
    out = {
        "shapes": len(rows),
        "compiles": sum(r["compiles"] for r in rows),
        "finddb_hits": sum(r["source"] == "finddb" for r in rows),
        "first_call_median_ms": round(statistics.median(firsts), 4),
        "first_call_p95_ms": round(_pct(firsts, 95), 4),
        "first_call_max_ms": round(max(firsts), 4),
        # Host time of find (record or ranking) and of the first run (invoker, launch), then
        # the wait for the kernel, each as a median.
        "find_median_ms": _median_of(rows, "find_ms"),
        "run_median_ms": _median_of(rows, "run_ms"),
        "sync_median_ms": _median_of(rows, "sync_ms"),
        # Shapes whose first call held a garbage-collector pause, and those pauses in all.
        "gc_shapes": sum(1 for r in rows if r.get("gc_ms", 0.0) > 0.0),
        "gc_total_ms": round(sum(r.get("gc_ms", 0.0) for r in rows), 3),
        "regret_shapes": len(regrets),
        "regret_geomean": round(math.exp(statistics.fmean(math.log1p(r) for r in regrets)) - 1,
                                4) if regrets else None,
        "regret_p95": round(_pct(regrets, 95), 4) if regrets else None,
    }
    for name, data in (("torch_heuristics", torch_h), ("torch_benchmark", torch_b)):
        trows = {r["key"]: r for r in data.get("rows", [])}
        if not trows:
            out[name] = {"error": data.get("error", "")[-500:]}
            continue
        tf = [r["first_call_ms"] for r in trows.values()]
        ratios = [r["steady_ms"] / trows[r["key"]]["steady_ms"] for r in rows
                  if r["key"] in trows and trows[r["key"]]["steady_ms"] > 0]
        out[name] = {"first_call_median_ms": round(statistics.median(tf), 4),
                     "first_call_p95_ms": round(_pct(tf, 95), 4),
                     "steady_ratio_geomean": round(math.exp(statistics.fmean(
                         math.log(r) for r in ratios)), 4) if ratios else None}
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--child", choices=ENGINES)
    ap.add_argument("--dtype", default="FP32")
    ap.add_argument("--no-best", action="store_true", help="skip the best-at-hand benchmark")
    ap.add_argument("--system-db", type=Path, help="folder of the installed package's dbs")
    ap.add_argument("--out", type=Path, default=HERE / "results" / "serving")
    ap.add_argument("--dtypes", default="FP32,FP16")
    ap.add_argument("--engines", default=",".join(ENGINES))
    ap.add_argument("--merge", nargs="+", type=Path,
                    help="combine the JSON of runs of one type each into --out")
    args = ap.parse_args()
    if args.merge:
        merged: dict = {}
        for path in args.merge:
            if not path.is_file():
                continue
            part = json.loads(path.read_text())
            for key in ("summary", "engines"):
                merged.setdefault(key, {}).update(part.pop(key, {}))
            merged = {**part, **merged}
        write(args.out, merged)
        return 0
    if args.child:
        if args.child == "miopenkernels":
            out = child_miopenkernels(args.dtype, not args.no_best)
        else:
            out = child_torch(args.dtype, args.child == "torch_benchmark")
        print(json.dumps(out))
        return 0
    base = {k: v for k, v in os.environ.items() if not k.startswith("MIOPEN_")}
    env = {**base, "MIOPEN_SYSTEM_DB_PATH": str(args.system_db or ""),
           "MIOPEN_USER_DB_PATH": tempfile.mkdtemp(prefix="user"),
           "MIOPEN_CUSTOM_CACHE_DIR": tempfile.mkdtemp(prefix="cache")}
    result: dict = {"method": __doc__.split("\n\n")[1:3], "batches": BATCHES, "sizes": SIZES,
                    "summary": {}, "engines": {}}
    for dtype in args.dtypes.split(","):
        data = {}
        for engine in args.engines.split(","):
            t0 = time.time()
            data[engine] = run_child(engine, dtype, env if engine == "miopenkernels" else base,
                                     not args.no_best)
            print(f"{dtype} {engine}: {time.time() - t0:.0f} s "
                  f"{data[engine].get('error', '')[-300:]}", flush=True)
        result["engines"][dtype] = data
        result["summary"][dtype] = summarise(data.get("miopenkernels", {}),
                                             data.get("torch_heuristics", {}),
                                             data.get("torch_benchmark", {}))
        print(json.dumps(result["summary"][dtype]), flush=True)
        mk = data.get("miopenkernels", {})
        th = data.get("torch_heuristics", {})
        result.update(device=mk.get("device") or th.get("device"), driver=mk.get("driver"),
                      torch=th.get("torch"), cudnn=th.get("cudnn"))
    from _machine import cpu_model, python_speed_ms

    result.update(cpu=cpu_model(), python_loop_ms=python_speed_ms())
    write(args.out, result)
    return 0


def write(out: Path, result: dict) -> None:
    import miopenkernels

    result["miopenkernels"] = miopenkernels.__version__
    result["python"] = sys.version.split()[0]
    out.parent.mkdir(parents=True, exist_ok=True)
    Path(str(out) + ".json").write_text(json.dumps(result, indent=1) + "\n")
    lines = [f"Serving: ResNet-50 forward layers at batch {', '.join(map(str, BATCHES))} and "
             f"{' and '.join(f'{s}x{s}' for s in SIZES)} ({result.get('device')}, torch "
             f"{result.get('torch')}, cuDNN {result.get('cudnn')}). First call in ms; regret of "
             "the chosen solution against the best the package holds (shapes without a FindDb "
             "record); steady ratio = miopenkernels / cuDNN. Host CPU: "
             f"{result.get('cpu', 'unknown')}, a fixed Python loop "
             f"{result.get('python_loop_ms', '?')} ms (host-side times compare as far as it "
             "does).", "",
             "| type | shapes | FindDb hits | compiles | first call median | p95 | regret geomean "
             "| regret p95 | cuDNN heur. first median | p95 | cuDNN bench. first median | steady "
             "ratio vs heur. | vs bench. |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for dtype, s in result["summary"].items():
        if "error" in s:
            lines.append(f"| {dtype} | error | | | | | | | | | | | |")
            continue
        th, tb = s.get("torch_heuristics", {}), s.get("torch_benchmark", {})

        def f(v: object, pct: bool = False) -> str:
            if not isinstance(v, (int, float)):
                return "-"
            return f"{100 * v:.1f}%" if pct else f"{v:.3g}"

        lines.append(
            f"| {dtype} | {s['shapes']} | {s['finddb_hits']} | {s['compiles']} | "
            f"{f(s['first_call_median_ms'])} | {f(s['first_call_p95_ms'])} | "
            f"{f(s['regret_geomean'], True)} | {f(s['regret_p95'], True)} | "
            f"{f(th.get('first_call_median_ms'))} | {f(th.get('first_call_p95_ms'))} | "
            f"{f(tb.get('first_call_median_ms'))} | {f(th.get('steady_ratio_geomean'))} | "
            f"{f(tb.get('steady_ratio_geomean'))} |")
    Path(str(out) + ".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    sys.exit(main())
