"""Find's pick against cuDNN over the model zoo: every layer, type, direction, layout and batch.

The layers are the distinct convolutions of dbs/manifests/zoo/*.txt (bench/zoo_shapes.py writes
them; each file's FP32 section lists every layer once, named); `--held-out` adds the networks of
dbs/manifests/zoo/held_out/ and reports them apart. Each layer runs as forward (F), backward data
(B) and backward weights (W) problems, in NCHW and NHWC (NCDHW and NDHWC for 3-D layers), for
FP32 (IEEE, against cuDNN with TF32 off), TF32 (the handle's TF32 math mode, against cuDNN with
TF32 on), FP16 and BF16, at batch 32, 8 and 1. Per problem, in one process: the tensors are
made on the device outside any timing (channels-last ones stored so, which PyTorch sees as
channels-last views); find picks a solution with the default find mode (an installed package's
databases when MIOPEN_SYSTEM_DB_PATH points at one); PyTorch's peer is aten.convolution or
aten.convolution_backward on the same tensors (cuDNN), and the two outputs are compared
(relative L2 error). Each side is timed two ways:
- GPU time: `--repeats` launches queued behind a sleep kernel long enough to cover the host's
  enqueueing, between two CUDA events (so host cost does not show), divided by the launches;
- wall time per call: the median over `--repeats` of one call (the runtime's `Handle.run`, or
  PyTorch's call) and a device synchronisation, host included.
cuDNN is timed with cudnn.benchmark on (its fastest algorithm) and, GPU time only, with it off
(its heuristics). Ratios are ours / cuDNN (above 1: cuDNN is faster).

The JSON holds `device` and versions, `networks`, `compiles` (kernels the handles compiled),
`errors` (problems that failed) with `failures`, `skipped` (problems over `--max-gb`),
`summary` per `<type>-<direction>-<layout>` over every batch (3-D cases by their layout) with
`gpu_geomean`, `gpu_geomean_heuristics`, `wall_geomean`, `max_ratio`, `layers` and `worst`,
`by_batch` (the same per batch), `by_network`, `classes` (per layer class: grouped, depthwise,
3-D, few-channel, dilated, transposed, plain), `held_out` (the same for held-out networks) and
`rows`. A time budget (`--budget-s`) stops the run between problems; what was not reached is
listed under `not_reached`. `--every K` keeps every K-th layer of each network's layers of one
class (the first, the K+1-th, ...; `every` in the JSON): a sample of the whole zoo, every class
of every network in it, for a run shorter than the zoo.

    python bench/zoo.py --out bench/results/zoo_h100 [--networks yolov5s,r2plus1d_18]
        [--types FP16,FP32] [--directions F] [--layouts NHWC] [--batches 32,8,1]
        [--held-out] [--every 3] [--classes few-channel] [--pointwise] [--most-channels 16]
        [--budget-s 540] [--list]
    python bench/zoo.py --picks sm90-132 [--out bench/results/zoo_picks_sm90-132]  # no GPU
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import statistics
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:  # loaded by path (the tests): its siblings too
    sys.path.insert(0, str(HERE))

# GPU and wall time, bench/_gpu_timing.py (re-exported: the benches built on this one use them).
from _gpu_timing import no_gpu, queued_gpu_ms, wall_ms  # noqa: E402
from _gpu_timing import sleep_ms_for as sleep_ms_for  # noqa: E402
from _results import Stopped, stop_on_sigterm  # noqa: E402


def _bench_kernels() -> Any:
    """bench/kernels.py (its cases' names and lists), loaded under a name of its own: the
    repository's kernels/ folder is a package of the same name."""
    spec = importlib.util.spec_from_file_location("bench_kernels", HERE / "kernels.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_KERNELS = _bench_kernels()
TYPES, DIRECTIONS, LAYOUTS = _KERNELS.TYPES, _KERNELS.DIRECTIONS, _KERNELS.LAYOUTS
case_name = _KERNELS.case_name

WORST = 5  # layers named per summary

# The zoo's layers (bench/_zoo_layers.py; re-exported: the benches built on this one use them).
from _zoo_layers import (  # noqa: E402,F401
    BATCHES,
    CLASSES,
    FEW_CHANNELS,
    HELD_OUT_DIR,
    ZOO_DIR,
    Layer,
    every_kth,
    layer_classes,
    layer_problem,
    load_layers,
    manifest_files,
    pointwise,
    read_layers,
    tensor_gb,
)


# ----------------------------------------------------------------------------- summaries
def geomean(values: Iterable[float]) -> float:
    vs = list(values)
    return math.exp(statistics.fmean(math.log(v) for v in vs)) if vs else float("nan")


def summarise(rows: list[dict], groups_of: Callable[[dict], Iterable[str]]) -> dict:
    """Per group (a row may be in several): the geomeans of the three ratios, the largest GPU
    ratio, the rows counted and the worst layers named."""
    grouped: dict[str, list[dict]] = {}
    for r in rows:
        for g in groups_of(r):
            grouped.setdefault(g, []).append(r)
    out = {}
    for g in sorted(grouped):
        rs = grouped[g]
        worst = sorted(rs, key=lambda r: r["ratio"], reverse=True)[:WORST]
        out[g] = {"gpu_geomean": round(geomean(r["ratio"] for r in rs), 4),
                  "gpu_geomean_heuristics": round(geomean(r["ratio_heuristics"] for r in rs), 4),
                  "wall_geomean": round(geomean(r["wall_ratio"] for r in rs), 4),
                  "max_ratio": round(worst[0]["ratio"], 4), "layers": len(rs),
                  "worst": [{"network": r["network"], "layer": r["layer"], "case": r["case"],
                             "n": r["n"], "key": r["key"], "ratio": round(r["ratio"], 4)}
                            for r in worst]}
    return out


def report(rows: list[dict]) -> dict:
    """The summaries of one set of rows: per case, per case and batch, per network, per
    layer class."""
    return {"summary": summarise(rows, lambda r: [r["case"]]),
            "by_batch": {str(b): summarise([r for r in rows if r["n"] == b],
                                           lambda r: [r["case"]])
                         for b in sorted({r["n"] for r in rows})},
            "by_network": summarise(rows, lambda r: [r["network"]]),
            "classes": summarise(rows, lambda r: r["classes"])}


def _tensors(p: Any, tdt: Any) -> dict:
    """{role: (stored tensor, logical NC... view)}: stored contiguous in the problem's layout."""
    import torch

    channels_last = p.in_layout in ("NHWC", "NDHWC")
    dims = p.spatial_dim
    out = {}
    for role, shape in (("x", p.in_shape), ("w", p.wei_shape), ("y", p.out_shape)):
        if channels_last:
            stored = torch.randn((shape[0], *shape[2:], shape[1]), device="cuda", dtype=tdt)
            view = stored.permute(0, dims + 1, *range(1, dims + 1))
        else:
            stored = view = torch.randn(shape, device="cuda", dtype=tdt)
        if role == "w":
            stored /= math.sqrt(shape[1] * math.prod(shape[2:]))
        out[role] = (stored, view)
    return out


def _peer(p: Any, views: dict) -> Callable[[], Any]:
    """PyTorch's call computing the problem's output from the other two tensors."""
    import torch

    x, w, y = views["x"], views["w"], views["y"]
    geo = (list(p.stride), list(p.pad), list(p.dilation), p.mode == "trans",
           [0] * p.spatial_dim, p.groups)
    if p.direction == "F":
        return lambda: torch.ops.aten.convolution(x, w, None, *geo)
    mask, index = ([True, False, False], 0) if p.direction == "B" else ([False, True, False], 1)
    return lambda: torch.ops.aten.convolution_backward(y, x, w, None, *geo, mask)[index]


def measure(handle: Any, layer: Layer, p: Any, type_name: str, repeats: int,
            warmup: int) -> dict:
    """Find's pick and cuDNN on the same tensors: GPU and wall times, the outputs compared."""
    import torch
    from miopenkernels.invoke import output_role, workspace_ptr
    from miopenkernels.problem import TYPE_BYTES
    from miopenkernels.tensor import DeviceTensor

    tdt = {"FP16": torch.float16, "BF16": torch.bfloat16}.get(p.in_type, torch.float32)
    tensors = _tensors(p, tdt)
    # The stored tensors' shapes are the memory-order ones (N, H, W, C for NHWC), as the
    # runtime checks them against the problem's layout.
    dev = {role: DeviceTensor(t.data_ptr(), t.numel() * TYPE_BYTES[p.in_type], p.in_type,
                              tuple(t.shape)) for role, (t, _) in tensors.items()}
    out_role = output_role(p)
    tensors[out_role][0].fill_(float("nan"))
    t0 = time.perf_counter()
    found = handle.find(p, dev["x"], dev["w"], dev["y"])
    find_ms = (time.perf_counter() - t0) * 1e3
    best = found[0]
    inv = handle.compile_solution(p, best)
    ptrs = {role: t.ptr for role, t in dev.items()}
    try:
        ptrs["workspace"] = workspace_ptr(handle.backend, inv)
        inv(ptrs)
        torch.cuda.synchronize()
        # FP32 for the comparison: FP64 copies of the zoo's largest outputs would not fit.
        ours_out = tensors[out_role][1].float().clone()
        torch.backends.cudnn.allow_tf32 = type_name == "TF32"
        torch.backends.cudnn.benchmark = True
        peer = _peer(p, {role: view for role, (_, view) in tensors.items()})
        ref = peer().float()
        err = float((ours_out - ref).norm() / max(float(ref.norm()), 1e-30))
        del ours_out, ref
        row = {"network": layer.network, "layer": layer.name,
               "classes": list(layer_classes(p)),
               "case": case_name(type_name, p.direction, p.in_layout), "n": p.n,
               "key": p.key(), "solver": best.solver, "source": best.source,
               "found": {s.solver: round(s.time, 5) for s in found},
               "find_ms": find_ms, "rel_err": err,
               "ours_gpu_ms": queued_gpu_ms(lambda: inv(ptrs), repeats, warmup),
               "ours_wall_ms": wall_ms(
                   lambda: handle.run(p, best, dev["x"], dev["w"], dev["y"]), repeats),
               "cudnn_gpu_ms": queued_gpu_ms(peer, repeats, warmup),
               "cudnn_wall_ms": wall_ms(peer, repeats)}
        torch.backends.cudnn.benchmark = False
        row["cudnn_heuristics_gpu_ms"] = queued_gpu_ms(peer, repeats, warmup)
    finally:
        # Thousands of problems: each invoker's workspace goes back after its problem.
        torch.cuda.synchronize()
        if inv.workspace is not None:
            inv.workspace.free()
            inv.workspace = None
    row["ratio"] = row["ours_gpu_ms"] / row["cudnn_gpu_ms"]
    row["ratio_heuristics"] = row["ours_gpu_ms"] / row["cudnn_heuristics_gpu_ms"]
    row["wall_ratio"] = row["ours_wall_ms"] / row["cudnn_wall_ms"]
    return row


# ----------------------------------------------------------------------------- picks (no GPU)
def picks(layers: list[Layer], target: str, types: list[str], directions: list[str],
          layouts: list[str], batches: list[int], library: bool = False) -> dict:
    """Immediate mode's first choice for every problem on `target`, without a GPU: per layer
    class (and `all`) the problems, those no solver applies to, and those whose first choice
    runs on matrix cores (a Triton solver); the problems without a solver named; how many
    problems each solver comes first on; and `by_problem`, each problem's first choice
    ("network/layer key": solver; bench/picks_compare.py compares two trees' files).
    `library`: as a CUDA runtime where the GEMM library loads chooses (its solvers offered)."""
    from miopenkernels.errors import MIOpenKernelsError
    from miopenkernels.handle import Handle
    from miopenkernels.solvers import SOLVERS, offer_library

    solvers = offer_library() if library else None
    handles = {"ieee": Handle(target=target, solvers=solvers),
               "tf32": Handle(target=target, math_mode="tf32", solvers=solvers)
               if "TF32" in types else None}
    languages = {s.name: s.language for s in solvers or SOLVERS}
    classes: dict[str, dict[str, int]] = {}
    unsolved: list[str] = []
    firsts: dict[str, int] = {}
    by_problem: dict[str, str] = {}
    for batch in batches:
        for type_name in types:
            handle = handles["tf32" if type_name == "TF32" else "ieee"]
            for direction in directions:
                for layout in layouts:
                    for layer in layers:
                        p = layer_problem(layer, type_name, direction, layout, batch)
                        try:
                            first = handle.solutions(p)[0].solver
                            on_cores = languages[first] == "triton"
                        except MIOpenKernelsError:
                            first, on_cores = "", False
                            unsolved.append(f"{layer.network}/{layer.name} {p.key()}")
                        firsts[first] = firsts.get(first, 0) + 1
                        by_problem[f"{layer.network}/{layer.name} {p.key()}"] = first
                        for c in ("all", *layer_classes(p)):
                            entry = classes.setdefault(c, {"problems": 0, "no_solver": 0,
                                                           "tensor_cores": 0})
                            entry["problems"] += 1
                            entry["no_solver"] += not first
                            entry["tensor_cores"] += bool(on_cores)
    return {"target": target, "classes": dict(sorted(classes.items())),
            "no_solver": unsolved, "first_choices": dict(sorted(firsts.items())),
            "by_problem": by_problem}


# ----------------------------------------------------------------------------- run
def _parse(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=HERE / "results" / "zoo")
    ap.add_argument("--networks", default="", help="comma-separated names (default: the zoo)")
    ap.add_argument("--types", default=",".join(TYPES), help="FP32, TF32, FP16, BF16")
    ap.add_argument("--directions", default=",".join(DIRECTIONS), help="F, B, W")
    ap.add_argument("--layouts", default=",".join(LAYOUTS),
                    help="NCHW, NHWC (NCDHW, NDHWC for 3-D layers)")
    ap.add_argument("--batches", default=",".join(map(str, BATCHES)),
                    help="batch sizes, in the order run")
    ap.add_argument("--held-out", action="store_true",
                    help="also the held-out networks, reported apart")
    ap.add_argument("--every", type=int, default=1, metavar="K",
                    help="every K-th layer of each network only (a sample of the zoo)")
    ap.add_argument("--pointwise", action="store_true",
                    help="of those, only the 1x1 layers at stride 1 without padding or groups")
    ap.add_argument("--most-channels", type=int, default=0, metavar="N",
                    help="of those, only the layers with at most N channels on one side")
    ap.add_argument("--classes", default="", metavar="CLASS[,CLASS]",
                    help="of those, only the layers of these classes (" + ", ".join(CLASSES)
                    + ")")
    ap.add_argument("--repeats", type=int, default=20, help="timed calls per engine")
    ap.add_argument("--warmup", type=int, default=3, help="untimed calls first")
    ap.add_argument("--budget-s", type=float, default=540.0, help="stop between problems after")
    ap.add_argument("--max-gb", type=float, default=12.0,
                    help="skip problems whose x, w and y exceed this many GB")
    ap.add_argument("--list", action="store_true",
                    help="print the layers per network and class and exit (no GPU)")
    ap.add_argument("--picks", metavar="TARGET",
                    help="print immediate mode's first choices on TARGET (e.g. sm90-132) per "
                    "layer class as JSON and exit (no GPU); with --out, also write OUT.json")
    ap.add_argument("--library", action="store_true",
                    help="with --picks: as a CUDA runtime where the GEMM library (cuBLAS) "
                    "loads chooses, its solvers offered")
    return ap.parse_args(argv)


def _fail(message: str, code: int) -> int:
    print(f"zoo: {message}", file=sys.stderr)
    return code


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    types = [t for t in args.types.split(",") if t]
    directions = [d for d in args.directions.split(",") if d]
    layouts = [lay for lay in args.layouts.split(",") if lay]
    networks = [n for n in args.networks.split(",") if n]
    try:
        batches = [int(b) for b in args.batches.split(",") if b]
    except ValueError:
        return _fail(f"--batches {args.batches!r} is not a list of integers", 3)
    bad = [t for t in types if t not in TYPES] + [d for d in directions if d not in DIRECTIONS] \
        + [lay for lay in layouts if lay not in LAYOUTS]
    if bad or not batches or any(b < 1 for b in batches) or args.repeats < 1 or args.every < 1:
        return _fail(f"unknown or empty {', '.join(bad) or '--batches, --repeats or --every'}; "
                     "see --help", 3)
    classes = [c for c in args.classes.split(",") if c]
    if any(c not in CLASSES for c in classes):
        return _fail(f"--classes {args.classes!r}: choose among {', '.join(CLASSES)}", 3)
    known = {p.stem for p, _ in manifest_files(held_out=True)}
    unknown = sorted(set(networks) - known)
    if unknown:
        return _fail(f"no zoo network {', '.join(unknown)}: choose among "
                     f"{', '.join(sorted(known))}", 3)
    layers = every_kth(load_layers(networks, args.held_out), args.every)
    if args.pointwise:
        layers = [la for la in layers if pointwise(la.problem)]
    if args.most_channels:
        layers = [la for la in layers if min(la.problem.c, la.problem.k) <= args.most_channels]
    if classes:
        layers = [la for la in layers if set(classes) & set(layer_classes(la.problem))]
    if args.list:
        for name in dict.fromkeys(la.network for la in layers):
            mine = [la for la in layers if la.network == name]
            counts = {c: sum(c in layer_classes(la.problem) for la in mine) for c in CLASSES}
            held = " (held out)" if mine[0].held_out else ""
            print(f"{name}{held}: {len(mine)} layers; "
                  + ", ".join(f"{c} {n}" for c, n in counts.items() if n))
        return 0
    if args.picks:
        from miopenkernels.errors import MIOpenKernelsError

        try:
            out = picks(layers, args.picks, types, directions, layouts, batches,
                        args.library)
        except MIOpenKernelsError as exc:
            return _fail(str(exc).splitlines()[0], exc.exit_code)
        out["networks"] = sorted({la.network for la in layers})
        text = json.dumps(out, indent=1) + "\n"
        if "--out" in (argv if argv is not None else sys.argv[1:]):
            args.out.parent.mkdir(parents=True, exist_ok=True)
            Path(str(args.out) + ".json").write_text(text)
        print(json.dumps({k: out[k] for k in ("classes", "first_choices")}))
        return 0
    if (why := no_gpu()) is not None:
        return _fail(why, 6)
    return _run(args, layers, types, directions, layouts, batches)


def _measure_all(args: argparse.Namespace, handles: dict, layers: list[Layer],
                 cases: tuple[list[int], list[str], list[str], list[str]],
                 out: tuple[list[dict], list[dict], list[dict], list[str]],
                 start: float) -> None:
    """Every case's layers measured into `out` (rows, failures, skipped, not reached), in
    order, until the budget runs out; a summary line per case."""
    import torch

    batches, types, directions, layouts = cases
    rows, failures, skipped, not_reached = out
    for batch in batches:
        for type_name in types:
            handle = handles["tf32" if type_name == "TF32" else "ieee"]
            for direction in directions:
                for layout in layouts:
                    name = f"{case_name(type_name, direction, layout)}@{batch}"
                    if time.perf_counter() - start > args.budget_s:
                        not_reached.append(name)
                        continue
                    for i, layer in enumerate(layers):
                        if time.perf_counter() - start > args.budget_s:
                            not_reached.append(f"{name} ({len(layers) - i} of {len(layers)} "
                                               "layers)")
                            break
                        p = layer_problem(layer, type_name, direction, layout, batch)
                        if tensor_gb(p) > args.max_gb:
                            skipped.append({"network": layer.network, "key": p.key(),
                                            "gb": round(tensor_gb(p), 2)})
                            continue
                        try:
                            row = measure(handle, layer, p, type_name, args.repeats,
                                          args.warmup)
                        except Exception as exc:  # noqa: BLE001 - a failing problem is reported
                            failures.append({"case": name, "network": layer.network,
                                             "key": p.key(),
                                             "error": str(exc).splitlines()[0][:300]})
                            print(f"{name} {p.key()}: {exc}", file=sys.stderr, flush=True)
                            torch.cuda.empty_cache()
                            continue
                        row["held_out"] = layer.held_out
                        rows.append(row)
                    done = [r for r in rows if f"{r['case']}@{r['n']}" == name]
                    if done:
                        s = summarise(done, lambda r: ["all"])["all"]
                        print(f"[{time.perf_counter() - start:6.1f} s] {name:20s} gpu "
                              f"{s['gpu_geomean']:.2f} heur {s['gpu_geomean_heuristics']:.2f} "
                              f"wall {s['wall_geomean']:.2f} max {s['max_ratio']:.2f} "
                              f"({s['layers']} layers)", flush=True)


def _run(args: argparse.Namespace, layers: list[Layer], types: list[str],
         directions: list[str], layouts: list[str], batches: list[int]) -> int:
    from miopenkernels.handle import Handle

    handles = {"ieee": Handle(), "tf32": Handle(math_mode="tf32") if "TF32" in types else None}
    rows: list[dict] = []
    failures: list[dict] = []
    skipped: list[dict] = []
    not_reached: list[str] = []
    start = time.perf_counter()
    try:
        with stop_on_sigterm():
            _measure_all(args, handles, layers, (batches, types, directions, layouts),
                         (rows, failures, skipped, not_reached), start)
    except Stopped:  # the run's time limit: what was measured is written all the same
        not_reached.append(f"the rest: stopped (SIGTERM) after "
                           f"{time.perf_counter() - start:.0f} s")
    result = _result(args, handles, rows, failures, skipped, not_reached, start)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    Path(str(args.out) + ".json").write_text(json.dumps(result, indent=1) + "\n")
    md = markdown(result)
    Path(str(args.out) + ".md").write_text(md)
    print(md)
    return 0 if not failures else 1


def _versions(handles: dict) -> dict:
    import miopenkernels
    import torch

    be = handles["ieee"].backend
    try:
        import triton

        triton_version = triton.__version__
    except ImportError:
        triton_version = None
    return {"device": be.device_name, "driver": getattr(be, "driver_version", ""),
            "torch": torch.__version__, "cuda": torch.version.cuda,
            "cudnn": torch.backends.cudnn.version(), "triton": triton_version,
            "miopenkernels": miopenkernels.__version__, "python": sys.version.split()[0]}


def _result(args: argparse.Namespace, handles: dict, rows: list[dict], failures: list[dict],
            skipped: list[dict], not_reached: list[str], start: float) -> dict:
    zoo = [r for r in rows if not r["held_out"]]
    held = [r for r in rows if r["held_out"]]
    result = {**_versions(handles), "method": __doc__.split("\n\n")[1],
              "networks": sorted({r["network"] for r in zoo}),
              "compiles": sum(h.compilations for h in handles.values() if h is not None),
              "errors": len(failures), "every": args.every, "repeats": args.repeats,
              "warmup": args.warmup,
              "seconds": round(time.perf_counter() - start, 1), **report(zoo)}
    if args.held_out or held:
        result["held_out"] = {"networks": sorted({r["network"] for r in held}), **report(held)}
    result.update({"skipped": skipped, "not_reached": not_reached, "failures": failures,
                   "rows": rows})
    return result


def markdown(result: dict) -> str:
    """The run's tables: per case, per layer class, per network (zoo, then held out)."""
    lines = [f"Find's pick against cuDNN over the model zoo, {result['device']}, driver "
             f"{result['driver']}, torch {result['torch']}, cuDNN {result['cudnn']}; GPU time "
             "queued behind a sleep kernel, ratio = ours / cuDNN (benchmark on; heuristics: "
             f"benchmark off); compiles {result['compiles']}, errors {result['errors']}."]
    parts = [("zoo", result)]
    if "held_out" in result:
        parts.append(("held out", result["held_out"]))
    for title, part in parts:
        for key, head in (("summary", "case"), ("classes", "class"), ("by_network", "network")):
            lines += ["", f"{title}: per {head}", "",
                      f"| {head} | layers | GPU geomean | heuristics | wall | max | worst |",
                      "| --- | --- | --- | --- | --- | --- | --- |"]
            for name, s in part[key].items():
                w = s["worst"][0]
                lines.append(f"| {name} | {s['layers']} | {s['gpu_geomean']:.2f} | "
                             f"{s['gpu_geomean_heuristics']:.2f} | {s['wall_geomean']:.2f} | "
                             f"{s['max_ratio']:.2f} | {w['network']} {w['layer']} "
                             f"{w['case']}@{w['n']} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
