"""Steady state of what find picks against cuDNN: every type, direction and layout.

The 23 distinct ResNet-50 forward convolutions, as forward (F), backward data (B) and backward
weights (W) problems, in NCHW and NHWC, for FP32 (IEEE, against cuDNN with TF32 off), TF32 (the
handle's TF32 math mode, against cuDNN with TF32 on), FP16 and BF16; at batch 32 (the shipped
databases' batch: find answers from the FindDb where it has the record) and at batch 1 and 64
(no record: the miss ranking picks among the shape-agnostic kernels at hand). Per problem, in one
process: the tensors are made on the device outside any timing (NHWC ones stored channels-last,
which PyTorch sees as channels_last views); find picks a solution with the default find mode
(an installed package's databases when MIOPEN_SYSTEM_DB_PATH points at one), its invoker is
launched `--warmup` times, then timed `--repeats` times between CUDA events (median); the
PyTorch peer (torch.nn.functional.conv2d, torch.nn.grad.conv2d_input / conv2d_weight, cuDNN with
cudnn.benchmark on) is timed the same way on the same tensors, and the two outputs are compared
(relative L2 error). The ratio is ours / cuDNN (above 1: cuDNN is faster).

What this times is a call, not the GPU alone: each call sits between its own two events, so
where a kernel is shorter than the host's work to launch it (PyTorch's dispatch for the peer,
the invoker's for ours) the host's time counts. Its ratios are calls against calls; GPU time
alone (launches queued behind a sleep kernel) is bench/zoo.py's, whose FP16 NHWC rows of
these layers read 1.73-2.16 where this table read 0.32-1.01 (bench/results/README.md,
zoo_h200-sample3).

The JSON keeps, under `summary` (batch 32) and `summary_b1`, `summary_b64`, one entry per
`<type>-<direction>-<layout>` (e.g. `FP16-F-NHWC`, `TF32-B-NCHW`) with `geomean_ratio`,
`max_ratio`, `max_layer`, `layers`, `max_rel_err` and the totals; `rows` holds every problem.
A time budget (`--budget-s`) stops the run between problems; cases and batches not reached are
listed under `not_reached`.

    python bench/kernels.py --out bench/results/kernels_h100 [--types FP16,BF16]
        [--directions F,B,W] [--layouts NCHW,NHWC] [--batches 32,1,64] [--json]
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

HERE = Path(__file__).resolve().parent
TYPES = ("FP32", "TF32", "FP16", "BF16")
DIRECTIONS = ("F", "B", "W")
LAYOUTS = ("NCHW", "NHWC")
BATCHES = (32, 1, 64)


def case_name(type_name: str, direction: str, layout: str) -> str:
    return f"{type_name}-{direction}-{layout}"


def problems(type_name: str, direction: str, layout: str, batch: int) -> list:
    """The 23 layers as problems of one case (TF32 problems are FP32 ones)."""
    sys.path.insert(0, str(HERE))
    from _layers import resnet50_layers

    storage = "FP32" if type_name == "TF32" else type_name
    return [replace(p, direction=direction, in_layout=layout, wei_layout=layout,
                    out_layout=layout) for p in resnet50_layers(storage, batch)]


def _median_ms(fn, repeats: int, warmup: int) -> float:  # noqa: ANN001
    import torch

    for _ in range(warmup):
        fn()
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(repeats):
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return float(statistics.median(times))


def _tensors(p, tdt, channels_last: bool) -> dict:  # noqa: ANN001
    """{role: (stored tensor, logical NCHW view)}: stored contiguous in the problem's layout."""
    import torch

    out = {}
    for role, shape in (("x", p.in_shape), ("w", p.wei_shape), ("y", p.out_shape)):
        if channels_last:
            stored = torch.randn((shape[0], *shape[2:], shape[1]), device="cuda", dtype=tdt)
            view = stored.permute(0, 3, 1, 2)
        else:
            stored = torch.randn(shape, device="cuda", dtype=tdt)
            view = stored
        if role == "w":
            stored /= math.sqrt(shape[1] * math.prod(shape[2:]))
        out[role] = (stored, view)
    return out


def _peer(p, views: dict):  # noqa: ANN001, ANN202
    """The PyTorch call computing the problem's output from the other two tensors."""
    import torch
    import torch.nn.functional as F

    x, w, y = views["x"], views["w"], views["y"]
    args = (p.stride, p.pad, p.dilation, p.groups)
    if p.direction == "F":
        return lambda: F.conv2d(x, w, None, *args)
    if p.direction == "B":
        return lambda: torch.nn.grad.conv2d_input(tuple(x.shape), w, y, *args)
    return lambda: torch.nn.grad.conv2d_weight(x, tuple(w.shape), y, *args)


def measure(handle, p, type_name: str, repeats: int, warmup: int) -> dict:  # noqa: ANN001
    """Find, then ours and cuDNN on the same tensors; the outputs compared."""
    import torch
    from miopenkernels.invoke import output_role, workspace_ptr
    from miopenkernels.problem import TYPE_BYTES
    from miopenkernels.tensor import DeviceTensor

    tdt = {"FP16": torch.float16, "BF16": torch.bfloat16}.get(p.in_type, torch.float32)
    tensors = _tensors(p, tdt, p.in_layout == "NHWC")
    storage = p.in_type
    # Memory-order shapes (N, H, W, C for NHWC): the runtime checks them against the layout.
    dev = {role: DeviceTensor(t.data_ptr(), t.numel() * TYPE_BYTES[storage], storage,
                              tuple(t.shape)) for role, (t, _) in tensors.items()}
    out_role = output_role(p)
    tensors[out_role][0].fill_(float("nan"))
    t0 = time.perf_counter()
    sols = handle.find(p, dev["x"], dev["w"], dev["y"])
    find_ms = (time.perf_counter() - t0) * 1e3
    best = sols[0]
    inv = handle.compile_solution(p, best)
    ptrs = {role: t.ptr for role, t in dev.items()}
    ptrs["workspace"] = workspace_ptr(handle.backend, inv)  # a split's partial sums
    inv(ptrs)
    torch.cuda.synchronize()
    ours_out = tensors[out_role][1].double().clone()
    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = type_name == "TF32"
    peer = _peer(p, {role: view for role, (_, view) in tensors.items()})
    ref = peer().double()
    err = float((ours_out - ref).norm() / max(float(ref.norm()), 1e-30))
    ours_ms = _median_ms(lambda: inv(ptrs), repeats, warmup)
    cudnn_ms = _median_ms(peer, repeats, warmup)
    return {"case": case_name(type_name, p.direction, p.in_layout), "n": p.n, "key": p.key(),
            "solver": best.solver, "source": best.source,
            "params": list(inv.params), "find_ms": find_ms, "ours_ms": ours_ms,
            "cudnn_ms": cudnn_ms, "ratio": ours_ms / cudnn_ms, "rel_err": err}


def summarise(rows: list[dict]) -> dict:
    """One entry per case: geomean and max of the ratios, the worst layer, totals, max error."""
    out: dict[str, dict] = {}
    for case in sorted({r["case"] for r in rows}):
        rs = [r for r in rows if r["case"] == case]
        worst = max(rs, key=lambda r: r["ratio"])
        out[case] = {"geomean_ratio": round(math.exp(statistics.fmean(math.log(r["ratio"])
                                                                      for r in rs)), 4),
                     "max_ratio": round(worst["ratio"], 4), "max_layer": worst["key"],
                     "layers": len(rs),
                     "ours_total_ms": round(sum(r["ours_ms"] for r in rs), 4),
                     "cudnn_total_ms": round(sum(r["cudnn_ms"] for r in rs), 4),
                     "max_rel_err": max(r["rel_err"] for r in rs)}
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=HERE / "results" / "kernels")
    ap.add_argument("--types", default=",".join(TYPES), help="FP32, TF32, FP16, BF16")
    ap.add_argument("--directions", default=",".join(DIRECTIONS), help="F, B, W")
    ap.add_argument("--layouts", default=",".join(LAYOUTS), help="NCHW, NHWC")
    ap.add_argument("--batches", default=",".join(map(str, BATCHES)),
                    help="batch sizes, in the order run (32 first: the summary's)")
    ap.add_argument("--repeats", type=int, default=20, help="timed launches per engine")
    ap.add_argument("--warmup", type=int, default=3, help="untimed launches first")
    ap.add_argument("--budget-s", type=float, default=540.0, help="stop between problems after")
    ap.add_argument("--json", action="store_true", help="print the summaries as JSON")
    args = ap.parse_args()
    types = [t for t in args.types.split(",") if t]
    directions = [d for d in args.directions.split(",") if d]
    layouts = [lay for lay in args.layouts.split(",") if lay]
    try:
        batches = [int(b) for b in args.batches.split(",") if b]
    except ValueError:
        print(f"kernels: --batches {args.batches!r} is not a list of integers", file=sys.stderr)
        return 3
    bad = [t for t in types if t not in TYPES] + [d for d in directions if d not in DIRECTIONS] \
        + [lay for lay in layouts if lay not in LAYOUTS]
    if bad or any(b < 1 for b in batches):
        print(f"kernels: unknown {', '.join(bad) or 'batch size'}; see --help", file=sys.stderr)
        return 3
    from _gpu_timing import no_gpu

    if (why := no_gpu()) is not None:
        print(f"kernels: {why}", file=sys.stderr)
        return 6
    import torch
    from miopenkernels.handle import Handle

    handles = {"ieee": Handle(), "tf32": Handle(math_mode="tf32") if "TF32" in types else None}
    rows: list[dict] = []
    failures: list[dict] = []
    not_reached: list[str] = []
    start = time.perf_counter()
    for batch in batches:
        for type_name in types:
            handle = handles["tf32" if type_name == "TF32" else "ieee"]
            for direction in directions:
                for layout in layouts:
                    name = f"{case_name(type_name, direction, layout)}@{batch}"
                    if time.perf_counter() - start > args.budget_s:
                        not_reached.append(name)
                        continue
                    for p in problems(type_name, direction, layout, batch):
                        try:
                            row = measure(handle, p, type_name, args.repeats, args.warmup)
                        except Exception as exc:  # noqa: BLE001 - a failing problem is reported
                            failures.append({"case": name, "key": p.key(),
                                             "error": str(exc).splitlines()[0][:300]})
                            print(f"{name} {p.key()}: {exc}", file=sys.stderr, flush=True)
                            continue
                        rows.append(row)
                    done = [r for r in rows if f"{r['case']}@{r['n']}" == name]
                    if done:
                        s = summarise(done)[done[0]["case"]]
                        print(f"[{time.perf_counter() - start:6.1f} s] {name:18s} geomean "
                              f"{s['geomean_ratio']:.2f} max {s['max_ratio']:.2f} "
                              f"({s['layers']} layers, max err {s['max_rel_err']:.1e})",
                              flush=True)
    be = handles["ieee"].backend
    result = {"device": be.device_name, "driver": getattr(be, "driver_version", ""),
              "torch": torch.__version__, "cudnn": torch.backends.cudnn.version(),
              "method": __doc__.split("\n\n")[1], "repeats": args.repeats,
              "warmup": args.warmup, "seconds": round(time.perf_counter() - start, 1)}
    for batch in batches:
        key = "summary" if batch == 32 else f"summary_b{batch}"
        result[key] = summarise([r for r in rows if r["n"] == batch])
    result.update({"not_reached": not_reached, "failures": failures, "rows": rows})
    args.out.parent.mkdir(parents=True, exist_ok=True)
    Path(str(args.out) + ".json").write_text(json.dumps(result, indent=1) + "\n")
    md = [f"Steady state of find's pick against cuDNN (cudnn.benchmark on), ResNet-50's 23 layers, "
          f"{result['device']}, torch {result['torch']}, cuDNN {result['cudnn']}; median of "
          f"{args.repeats} CUDA-event timings; ratio = ours / cuDNN.", "",
          "| case | batch | layers | geomean ratio | max ratio | worst layer | max rel. err |",
          "| --- | --- | --- | --- | --- | --- | --- |"]
    for batch in batches:
        for case, s in result["summary" if batch == 32 else f"summary_b{batch}"].items():
            md.append(f"| {case} | {batch} | {s['layers']} | {s['geomean_ratio']:.2f} | "
                      f"{s['max_ratio']:.2f} | {s['max_layer']} | {s['max_rel_err']:.1e} |")
    if not_reached or failures:
        md += ["", f"Not reached in the time budget: {', '.join(not_reached) or 'none'}; "
               f"failed problems: {len(failures)}."]
    Path(str(args.out) + ".md").write_text("\n".join(md) + "\n")
    if args.json:
        print(json.dumps({k: v for k, v in result.items() if k.startswith("summary")}))
    else:
        print("\n".join(md))
    return 0


if __name__ == "__main__":
    sys.exit(main())
