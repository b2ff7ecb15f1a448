"""Named solvers side by side on the zoo's layers, each at the parameters the runtime would give
it, against cuDNN (on the device machine).

For each sampled zoo layer (bench/zoo.py's layers, `--every`, `--held-out`) of each case and
batch, every solver of `--solvers` that applies runs at its ranked parameters (immediate mode's
candidate for it where the ranking has one at hand, else the solver's defaults; a kernel the
package lacks is compiled, outside the timing, and counted), on the same tensors, timed as
bench/zoo.py times find's pick: GPU time queued behind a sleep kernel. Each output is compared
with cuDNN's (relative L2 error). FP32 runs IEEE on both sides (cuDNN's TF32 off), TF32 under
the handle's TF32 math mode against cuDNN with TF32 on, as in bench/zoo.py (runs before
2026-12-04 left cuDNN's default, TF32 on, for FP32 too: alternatives_blas_fp32_h200 and
alternatives_smallc2d_fp32_h200 compare against that). A layer where fewer than two of the
solvers apply is skipped (`--min-solvers`: one, to time one solver against the same run of
another tree, as bench/gpu_conv3d.sh's ab step does), and one where no solver whose name
starts with `--require` applies.
`--only` keeps the layers whose FindDb key matches a regular expression (e.g. `-1x1-` for 1x1
filters). A name may carry a tile, NAME@BLOCK_M:BLOCK_N:BLOCK_K:GROUP_M:num_warps:num_stages
[:SPLIT_K] (the solver's defaults with that tile, and that split where given, 0 for the one
`conv_triton_spec.split_for` gives the tile; its object compiled on first use), to compare
tiles of one solver; or a split, NAME@split=S, NAME@split*F, NAME@split/F (the defaults at
that split, timed only where it changes theirs), to compare splits of one solver. The name
`pick` is immediate mode's first choice on the layer (what a first call gets: find's pick in
the default find mode without a record), whichever solver that is; its row names it
(`solver`), and where it is a named solver at the same parameters that one's time serves both.

    python bench/solver_alternatives.py --solvers ConvTritonGemm1x1Wrw,ConvTritonImplicitGemmWrw \
        --types FP16 --directions W --layouts NCHW --batches 32 --only -1x1- \
        --out bench/results/alternatives_1x1_wrw_h200

Writes <out>.json (device, versions, rows: per layer each solver's GPU ms and error, cuDNN's
GPU ms) and prints, per case, each solver's geomean against cuDNN and the geomean of each
solver's time over the first's, over the layers all of them ran.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import zoo  # noqa: E402 - bench/zoo.py, beside this file
from _results import Stopped, read_json, stop_on_sigterm  # noqa: E402


def _parse(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--solvers", default="", help="comma-separated solver names")
    ap.add_argument("--out", type=Path, default=HERE / "results" / "alternatives")
    ap.add_argument("--networks", default="", help="comma-separated names (default: the zoo)")
    ap.add_argument("--types", default="FP16", help="FP32, TF32, FP16, BF16")
    ap.add_argument("--directions", default="F,B,W")
    ap.add_argument("--layouts", default="NCHW,NHWC")
    ap.add_argument("--batches", default="32")
    ap.add_argument("--held-out", action="store_true", help="also the held-out networks")
    ap.add_argument("--every", type=int, default=1, metavar="K", help="every K-th layer")
    ap.add_argument("--only", default="", metavar="REGEX", help="keys matching REGEX alone")
    ap.add_argument("--require", default="", metavar="PREFIX",
                    help="skip a layer where no named solver starting with PREFIX applies")
    ap.add_argument("--min-solvers", type=int, default=2, choices=(1, 2),
                    help="skip a layer where fewer of the solvers apply (1: one solver, timed "
                         "against another tree's run)")
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--budget-s", type=float, default=300.0, help="stop between problems after")
    ap.add_argument("--max-gb", type=float, default=6.0,
                    help="skip problems whose x, w and y exceed this many GB")
    ap.add_argument("--json", action="store_true", help="print the summary as JSON")
    ap.add_argument("--from-json", type=Path, metavar="FILE",
                    help="print the summary of a saved run (no GPU) and exit")
    return ap.parse_args(argv)


#: A tile override in a --solvers entry: NAME@BLOCK_M:BLOCK_N:BLOCK_K:GROUP_M:num_warps:
#: num_stages[:SPLIT_K] (a tunable Triton solver's first four and last two parameters, then
#: optionally its split; without it SPLIT_K stays the defaults'). NAME@split=S, NAME@split*F,
#: NAME@split/F: the defaults at split S, or F times (a F-th of) the defaults' split; such an
#: entry applies only where that changes the defaults' split (@split*F and @split/F only where
#: the defaults split).
TILE_FIELDS = (0, 1, 2, 3, 5, 6)
SPLIT_FIELD = 4
#: The --solvers name of immediate mode's first choice.
PICK = "pick"


def tiled_params(params: tuple[int, ...], tile: str) -> tuple[int, ...]:
    """`params` with the six (or seven, the split last) values of a NAME@... tile in their
    places; ValueError where the tile is not six or seven integers."""
    values = [int(v) for v in tile.split(":")]
    fields = TILE_FIELDS + ((SPLIT_FIELD,) if len(values) == len(TILE_FIELDS) + 1 else ())
    if len(values) != len(fields):
        raise ValueError(f"a tile is {len(TILE_FIELDS)} integers a:b:c:d:e:f (a seventh, "
                         f"the split, optional), not {tile!r}")
    out = list(params)
    for i, v in zip(fields, values, strict=True):
        out[i] = v
    return tuple(out)


def split_params(params: tuple[int, ...], spec: str) -> tuple[int, ...]:
    """`params` at the split a NAME@split=S, @split*F or @split/F entry names (at least 1);
    ValueError for anything else."""
    for op in ("=", "*", "/"):
        head, sep, value = spec.partition(op)
        if head == "split" and sep and value.isdigit() and int(value) > 0:
            split = params[SPLIT_FIELD]
            new = int(value) if op == "=" else split * int(value) if op == "*" else \
                max(1, split // int(value))
            return params[:SPLIT_FIELD] + (new,) + params[SPLIT_FIELD + 1:]
    raise ValueError(f"a split entry is split=S, split*F or split/F, not {spec!r}")


def _filling_split(p: Any, params: tuple[int, ...], target: Any) -> tuple[int, ...]:
    """`params` with the implicit GEMM's split that fills `target` at their tile
    (`conv_triton_spec.split_for`'s defaults for the problem's kernel)."""
    from miopenkernels.solvers.triton_common import (
        PARAM_NAMES,
        problem_view,
        spec_module,
        spec_sizes,
    )

    view, _, kernel, _ = problem_view(p)
    config = {**dict(zip(PARAM_NAMES, params, strict=False)), "SPLIT_K": 1}
    split = spec_module().split_for(kernel, spec_sizes(view), config, target.cu)
    return params[:SPLIT_FIELD] + (int(split),) + params[SPLIT_FIELD + 1:]


def filling_split(solver: Any, p: Any, params: tuple[int, ...], target: Any
                  ) -> tuple[int, ...]:
    """`params` as they are, or where their split is 0, at the split that fills `target` at
    their tile: the solver's own rule where it has one (`filling_params`), else the implicit
    GEMM's (`_filling_split`)."""
    if params[SPLIT_FIELD] != 0:
        return params
    if hasattr(solver, "filling_params"):
        return tuple(solver.filling_params(p, params, target))
    return _filling_split(p, params, target)


def _named(name: str) -> Any:
    """The solver called `name`: the registry's, or a GEMM-library one
    (`solvers.LIBRARY_SOLVERS`, offered by a runtime where the library loads)."""
    from miopenkernels.solvers import LIBRARY_SOLVERS, get_solver

    for solver in LIBRARY_SOLVERS:
        if solver.name == name:
            return solver
    return get_solver(name)


def _solution(handle: Any, p: Any, name: str) -> Any:
    """The solver's ranked solution for `p` (its parameters the ranking's), else one at the
    solver's defaults; NAME@tile: the defaults with that tile (`tiled_params`). None where it
    does not apply (or the tile is not legal for it)."""
    from miopenkernels.plan import ConvSolution

    if name == PICK:
        ranked = handle.solutions(p)
        return ranked[0] if ranked else None
    if "@" in name:
        base, tile = name.split("@", 1)
        solver = _named(base)
        if not solver.is_applicable(p, handle.target):
            return None
        defaults = tuple(solver.default_params(p, handle.target))
        if tile.startswith("split"):
            params = split_params(defaults, tile)
            if params == defaults or (not tile.startswith("split=") and
                                      defaults[SPLIT_FIELD] <= 1):
                return None
        else:
            params = filling_split(solver, p, tiled_params(defaults, tile), handle.target)
        if not solver.params_valid(p, handle.target, params):
            return None
        return ConvSolution(base, "", 0.0, 0, "tile", params)
    for s in handle.solutions(p):
        if s.solver == name:
            return s
    solver = _named(name)
    if not solver.is_applicable(p, handle.target):
        return None
    params = tuple(solver.default_params(p, handle.target)) if solver.tunable else None
    return ConvSolution(name, "", 0.0, 0, "defaults", params)


def _time(handle: Any, p: Any, sol: Any, tensors: dict, ref: Any, repeats: int,
          warmup: int) -> dict:
    import torch
    from miopenkernels.invoke import output_role, workspace_ptr
    from miopenkernels.problem import TYPE_BYTES
    from miopenkernels.tensor import DeviceTensor

    jit = handle.compilations
    # The handle keeps one invoker per (problem, solver): tiles of one solver each need theirs.
    handle.context.invokers.pop((p, sol.solver), None)
    inv = handle.compile_solution(p, sol)
    dev = {role: DeviceTensor(t.data_ptr(), t.numel() * TYPE_BYTES[p.in_type], p.in_type,
                              tuple(t.shape)) for role, (t, _) in tensors.items()}
    ptrs = {role: t.ptr for role, t in dev.items()}
    out = tensors[output_role(p)][1]
    try:
        ptrs["workspace"] = workspace_ptr(handle.backend, inv)
        out.fill_(float("nan"))
        inv(ptrs)
        torch.cuda.synchronize()
        mine = out.float()
        err = float((mine - ref).norm() / max(float(ref.norm()), 1e-30))
        ms = zoo.queued_gpu_ms(lambda: inv(ptrs), repeats, warmup)
    finally:
        torch.cuda.synchronize()
        if inv.workspace is not None:
            inv.workspace.free()
            inv.workspace = None
    return {"gpu_ms": ms, "rel_err": err, "params": list(sol.params or ()),
            "source": sol.source, "solver": sol.solver, "compiled": handle.compilations - jit}


def _time_all(handle: Any, p: Any, sols: dict[str, Any], tensors: dict, ref: Any,
              repeats: int, warmup: int) -> dict[str, dict]:
    """Each solution timed (`_time`); `pick` (PICK) takes the time of the named solver it is
    at the same parameters."""
    out = {n: _time(handle, p, s, tensors, ref, repeats, warmup)
           for n, s in sols.items() if n != PICK}
    pick = sols.get(PICK)
    if pick is not None:
        same = out.get(pick.solver)
        out[PICK] = dict(same, compiled=0) if same is not None and \
            same["params"] == list(pick.params or ()) else \
            _time(handle, p, pick, tensors, ref, repeats, warmup)
    return out


def summarise(rows: list[dict], names: list[str]) -> dict:
    """Per case, over the layers every named solver that ran in the case ran on: each one's
    geomean and largest time against cuDNN, its geomean over the first such solver's time, the
    layers it beat that one on, and its largest relative error."""
    out: dict[str, dict] = {}
    for case in dict.fromkeys(r["case"] for r in rows):
        mine = [r for r in rows if r["case"] == case]
        present = [n for n in names if any(n in r["solvers"] for r in mine)]
        full = [r for r in mine if all(n in r["solvers"] for n in present)]
        if len(present) < 2 or not full:
            continue
        first = present[0]
        entry: dict[str, Any] = {"layers": len(full), "solvers": present}
        for n in present:
            ratios = [r["solvers"][n]["gpu_ms"] / r["cudnn_gpu_ms"] for r in full]
            entry[n] = {
                "vs_cudnn": zoo.geomean(ratios), "max_vs_cudnn": max(ratios),
                "vs_first": zoo.geomean(r["solvers"][n]["gpu_ms"] / r["solvers"][first]["gpu_ms"]
                                        for r in full),
                "faster_than_first": sum(r["solvers"][n]["gpu_ms"] < r["solvers"][first]["gpu_ms"]
                                         for r in full),
                "max_rel_err": max(r["solvers"][n]["rel_err"] for r in full)}
        out[case] = entry
    return out


def table(summary: dict) -> str:
    """The summary as text, a block per case."""
    lines = []
    for case, entry in summary.items():
        first = entry["solvers"][0]
        lines.append(f"{case}: {entry['layers']} layers")
        for n in entry["solvers"]:
            e = entry[n]
            lines.append(f"  {n:42s} vs cuDNN {e['vs_cudnn']:6.2f} (max {e['max_vs_cudnn']:6.2f})"
                         f"  vs {first} {e['vs_first']:5.2f}  faster {e['faster_than_first']}"
                         f"  max error {e['max_rel_err']:.1e}")
    return "\n".join(lines)


def _measure_all(args: argparse.Namespace, handles: dict, layers: list, names: list[str],
                 split: dict[str, list[str]], batches: list[int], only: re.Pattern | None,
                 rows: list[dict], failures: list[dict], start: float) -> None:
    """Each layer of each case timed on cuDNN and on every named solver into `rows` (a
    problem that fails into `failures`), until the budget runs out."""
    import torch

    for batch in batches:
        for t in split["types"]:
            handle = handles["tf32" if t == "TF32" else "ieee"]
            for d in split["directions"]:
                for lay in split["layouts"]:
                    for layer in layers:
                        if time.perf_counter() - start > args.budget_s:
                            break
                        p = zoo.layer_problem(layer, t, d, lay, batch)
                        if (only and not only.search(p.key())) or \
                                zoo.tensor_gb(p) > args.max_gb:
                            continue
                        try:
                            sols = {n: _solution(handle, p, n) for n in names}
                            sols = {n: s for n, s in sols.items() if s is not None}
                            if len(sols) < args.min_solvers or (args.require and not any(
                                    n.startswith(args.require) for n in sols)):
                                continue
                            tdt = {"FP16": torch.float16, "BF16": torch.bfloat16}.get(
                                p.in_type, torch.float32)
                            tensors = zoo._tensors(p, tdt)
                            torch.backends.cudnn.allow_tf32 = t == "TF32"
                            torch.backends.cudnn.benchmark = True
                            peer = zoo._peer(p, {r: v for r, (_, v) in tensors.items()})
                            ref = peer().float()
                            row = {"network": layer.network, "layer": layer.name,
                                   "held_out": layer.held_out,
                                   "case": zoo.case_name(t, d, p.in_layout), "n": batch,
                                   "key": p.key(),
                                   "cudnn_gpu_ms": zoo.queued_gpu_ms(peer, args.repeats,
                                                                     args.warmup),
                                   "solvers": _time_all(handle, p, sols, tensors, ref,
                                                        args.repeats, args.warmup)}
                            del ref, tensors
                        except Exception as exc:  # noqa: BLE001 - reported, the run goes on
                            failures.append({"key": p.key(), "error": str(exc)[:300]})
                            torch.cuda.empty_cache()
                            continue
                        rows.append(row)


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    if args.from_json:
        try:
            saved = read_json(args.from_json)
            summary = summarise(saved["rows"], saved["solvers"])
        except (OSError, ValueError, KeyError, TypeError) as exc:
            print(f"solver_alternatives: {args.from_json} is not a saved run: "
                  f"{str(exc).splitlines()[0]}", file=sys.stderr)
            return 2
        print(json.dumps(summary, indent=1) if args.json else table(summary))
        return 0
    if not args.solvers:
        print("solver_alternatives: name the solvers (--solvers A,B)", file=sys.stderr)
        return 3
    names = [n for n in args.solvers.split(",") if n]
    split = {k: [v for v in getattr(args, k).split(",") if v]
             for k in ("types", "directions", "layouts", "networks")}
    try:
        for n in names:
            if n == PICK:
                continue
            _named(n.split("@")[0])
            if "@" in n:
                tile = n.split("@", 1)[1]
                if tile.startswith("split"):
                    split_params((1,) * 7, tile)
                else:
                    tiled_params((0,) * 7, tile)
        batches = [int(b) for b in args.batches.split(",") if b]
        only = re.compile(args.only) if args.only else None
    except (ValueError, re.error) as exc:
        print(f"solver_alternatives: {str(exc).splitlines()[0]}", file=sys.stderr)
        return 3
    except Exception as exc:  # noqa: BLE001 - the library's own error names the solvers
        print(f"solver_alternatives: {str(exc).splitlines()[0]}", file=sys.stderr)
        return 3
    if len(names) < args.min_solvers:
        print(f"solver_alternatives: name at least {'one' if args.min_solvers == 1 else 'two'}"
              " solvers (--solvers A,B)",
              file=sys.stderr)
        return 3
    from _gpu_timing import no_gpu

    if (why := no_gpu()) is not None:
        print(f"solver_alternatives: {why}", file=sys.stderr)
        return 6
    from miopenkernels.handle import Handle

    # The handle's math mode and cuDNN's follow the type, as bench/zoo.py's: FP32 is IEEE on
    # both sides (cuDNN's TF32 off), TF32 the TF32 math mode against cuDNN with TF32 on.
    handles = {"ieee": Handle(),
               "tf32": Handle(math_mode="tf32") if "TF32" in split["types"] else None}
    layers = zoo.every_kth(zoo.load_layers(split["networks"], args.held_out), args.every)
    rows: list[dict] = []
    failures: list[dict] = []
    start = time.perf_counter()
    stopped = None
    try:
        with stop_on_sigterm():
            _measure_all(args, handles, layers, names, split, batches, only, rows, failures,
                         start)
    except Stopped:  # the run's time limit: what was measured is written all the same
        stopped = round(time.perf_counter() - start, 1)
    summary = summarise(rows, names)
    versions = zoo._versions(handles)
    result = {**versions, "solvers": names, "every": args.every, "only": args.only,
              "seconds": round(time.perf_counter() - start, 1), "stopped_at_s": stopped,
              "summary": summary,
              "failures": failures, "rows": rows}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    Path(str(args.out) + ".json").write_text(json.dumps(result, indent=1) + "\n")
    if args.json:
        print(json.dumps(summary, indent=1))
    else:
        print(table(summary))
        print(f"{len(rows)} layers, {len(failures)} failures, "
              f"{sum(s['compiled'] for r in rows for s in r['solvers'].values())} compiles, "
              f"{result['seconds']} s")
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main())
