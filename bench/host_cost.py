"""Host cost per call: one convolution called in loops of 100, with the GPU held busy
(host) and not (wall).

The layer (default: a 7x7 1x1 FP16 convolution, batch 32, 2048 -> 512 channels) is run on the
same torch tensors by each engine in turn:
- torch_conv2d: `torch.nn.functional.conv2d` (cuDNN);
- handle_run: `Handle.run(problem, solution, x, w, y)` (its kept plan, looked up per call);
- plan: a kept `Plan` called directly (`plan(x, w, y)`);
- torch_op: `miopenkernels.torch.conv2d`, where that package is importable;
- torch_conv2d_autograd, torch_op_autograd: the same two with a weight that requires grad
  (a training forward: torch records the call for autograd; the graph is dropped).
The solution is the best-ranked one that is a single launch. Per engine: `host_us`, the time
to issue one call, measured with a sleep kernel queued ahead of the loop so that the GPU is
busy until the loop ends and its time shows nowhere (the loop's calls stay under the driver's
launch queue, which would otherwise block the host); and `wall_us`, the time per call of the
same loop up to its final synchronisation, GPU time included; the median of `--repeats`
loops. The ratios against torch are the bar: Handle.run at most 1.2x, a kept plan at most 0.8x.

    python bench/host_cost.py --out bench/results/host_cost_h100.json
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


def _loop(call: Callable[[], None], calls: int, sync: Callable[[], None],
          hold: Callable[[], None] | None = None) -> float:
    """Microseconds per call of `calls` calls: with `hold` (a sleep kernel queued first, long
    enough to outlast the loop) the time to issue them, the GPU showing nowhere; without, the
    wall time per call up to the final synchronisation."""
    sync()
    if hold is not None:
        hold()
    t0 = time.perf_counter()
    for _ in range(calls):
        call()
    t1 = time.perf_counter()
    sync()
    t2 = time.perf_counter()
    return (t1 - t0 if hold is not None else t2 - t0) * 1e6 / calls


def _measure(call: Callable[[], None], calls: int, repeats: int,
             sync: Callable[[], None], hold: Callable[[], None]) -> dict[str, float]:
    for _ in range(20):  # warm-up: first-call work, caches, clocks
        call()
    host = [_loop(call, calls, sync, hold) for _ in range(repeats)]
    wall = [_loop(call, calls, sync) for _ in range(repeats)]
    return {"host_us": round(statistics.median(host), 3),
            "wall_us": round(statistics.median(wall), 3),
            "host_us_min": round(min(host), 3)}


def _versions(handle: Any) -> dict[str, str]:
    out = {"python": platform.python_version()}
    for name in ("torch", "cuda.bindings", "triton", "numpy"):
        try:
            module = __import__(name, fromlist=["__version__"])
            out[name] = str(getattr(module, "__version__", "?"))
        except ImportError:
            out[name] = "absent"
    import miopenkernels

    out["miopenkernels"] = str(getattr(miopenkernels, "__version__", "?"))
    out["cuda_driver"] = str(getattr(handle.backend, "driver_version", "?"))
    return out


def _single_launch_plan(handle: Any, problem: Any, budget_s: float) -> tuple[Any, Any]:
    """The best-ranked solution whose plan is one launch (compiling as needed)."""
    from miopenkernels.errors import MIOpenKernelsError

    start = time.perf_counter()
    tried = []
    for sol in handle.solutions(problem):
        if time.perf_counter() - start > budget_s:
            break
        try:
            plan = handle.plan(problem, sol)
        except MIOpenKernelsError as exc:
            tried.append(f"{sol.solver}: {exc}")
            continue
        inv = plan.invoker
        if not (inv.first or inv.then or inv.zero_first):
            return sol, plan
        tried.append(f"{sol.solver}: {1 + len(inv.first) + len(inv.then)} launches")
    raise SystemExit("no single-launch solution: " + "; ".join(tried))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=32)
    ap.add_argument("--c", type=int, default=2048)
    ap.add_argument("--k", type=int, default=512)
    ap.add_argument("--hw", type=int, default=7)
    ap.add_argument("--type", default="FP16", choices=("FP16", "FP32", "BF16"))
    ap.add_argument("--calls", type=int, default=100,
                    help="calls per timed loop (a loop must stay under the driver's launch queue)")
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--compile-budget-s", type=float, default=120.0)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)

    import torch
    import torch.nn.functional as F  # noqa: N812
    from miopenkernels.handle import Handle
    from miopenkernels.problem import ConvProblem

    dtype = {"FP16": torch.float16, "FP32": torch.float32, "BF16": torch.bfloat16}[args.type]
    torch.backends.cudnn.benchmark = False
    dev = torch.device("cuda", 0)
    x = torch.randn(args.n, args.c, args.hw, args.hw, device=dev, dtype=dtype)
    w = torch.randn(args.k, args.c, 1, 1, device=dev, dtype=dtype) / args.c ** 0.5
    y = torch.empty(args.n, args.k, args.hw, args.hw, device=dev, dtype=dtype)
    w_grad = w.clone().requires_grad_()
    problem = ConvProblem(n=args.n, c=args.c, k=args.k, in_spatial=(args.hw, args.hw),
                          filter=(1, 1), in_type=args.type)
    handle = Handle()
    sol, plan = _single_launch_plan(handle, problem, args.compile_budget_s)
    plan(x, w, y)
    torch.cuda.synchronize()
    want = F.conv2d(x.float(), w.float())
    err = float((y.float() - want).abs().max() / want.abs().max())

    sync = torch.cuda.synchronize
    # A sleep kernel that outlasts a loop of `calls` calls at up to 200 us each (in SM clock
    # cycles at 2 GHz, about the boost clock of the GPUs this runs on).
    cycles = int(2e9 * args.calls * 200e-6)

    def hold() -> None:
        torch.cuda._sleep(cycles)
    engines: dict[str, Callable[[], None]] = {
        "torch_conv2d": lambda: F.conv2d(x, w),
        "handle_run": lambda: handle.run(problem, sol, x, w, y),
        "plan": lambda: plan(x, w, y),
    }
    try:
        from miopenkernels import torch as mk_torch

        engines["torch_op"] = lambda: mk_torch.conv2d(x, w)
        engines["torch_conv2d_autograd"] = lambda: F.conv2d(x, w_grad)
        engines["torch_op_autograd"] = lambda: mk_torch.conv2d(x, w_grad)
    except ImportError as exc:
        print(f"miopenkernels.torch not importable ({exc}): torch_op left out", file=sys.stderr)
    results = {}
    for name, call in engines.items():
        try:
            results[name] = _measure(call, args.calls, args.repeats, sync, hold)
        except Exception as exc:  # noqa: BLE001 - one engine failing leaves the others
            results[name] = {"error": f"{type(exc).__name__}: {exc}"[:300]}
    base = results["torch_conv2d"]["host_us"]
    for r in results.values():
        if "host_us" in r:
            r["vs_torch_host"] = round(r["host_us"] / base, 3)
    props = torch.cuda.get_device_properties(0)
    record = {
        "layer": {"n": args.n, "c": args.c, "k": args.k, "hw": args.hw, "filter": "1x1",
                  "type": args.type, "key": problem.key()},
        "solution": sol.solver, "solution_params": list(plan.invoker.params),
        "max_rel_error_vs_torch": err, "calls": args.calls, "repeats": args.repeats,
        "device": props.name, "versions": _versions(handle), "engines": results,
        "bar": {"handle_run_max": 1.2, "plan_max": 0.8},
        "host_cost": {"torch_conv2d_us": base,
                      "handle_run_us": results["handle_run"].get("host_us"),
                      "plan_us": results["plan"].get("host_us"),
                      "torch_op_us": results.get("torch_op", {}).get("host_us")},
    }
    print(f"{props.name}  {problem.key()}  solution {sol.solver}  max rel err {err:.2e}")
    print(f"{'engine':14} {'host us':>9} {'wall us':>9} {'x torch':>8}")
    for name, r in results.items():
        if "error" in r:
            print(f"{name:14} error: {r['error']}")
        else:
            print(f"{name:14} {r['host_us']:9.2f} {r['wall_us']:9.2f} {r['vs_torch_host']:8.2f}")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(record, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
