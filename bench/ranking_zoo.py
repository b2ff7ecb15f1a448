"""The miss ranking over the zoo, scored on the solver timings already measured there (no GPU).

The committed H200 runs of bench/solver_alternatives.py (several solvers side by side on a zoo
or held-out layer, each at the parameters the runtime gave it) and of bench/zoo.py (the
runtime's pick on a layer, at the tree it ran) hold GPU times (queued behind a sleep kernel)
next to cuDNN's on the same tensors. Each timing counts as its share of cuDNN's time in its own
run, so that runs of different days compare; the FP32 rows of two solver_alternatives.py runs
timed cuDNN with TF32 on (TF32_PEER) and are kept apart from the IEEE ones (`peer`). For every
layer, case and batch with two or more timed solvers that still apply, this asks the runtime's
miss ranking (immediate mode, no database consulted, the objects a package ships at hand, the
GEMM library offered as on a CUDA device, TF32 solvers under the TF32 math mode alone) for its
first choice, and where that solver was timed scores it against the fastest timed solver of
the same layer:

- top-1: the choice is the fastest timed solver;
- regret: its time / the fastest's - 1 (mean, geometric mean, p95, max).

Leave one network out: the ranking model is refitted without any timing of the network's layers
(any batch, type, layout or direction; ranking_eval.model_without) wherever the model's samples
hold one; elsewhere the shipped model (dbs/ranking.json) has seen none of it. The solvers' own
rules (`ranks_first`, `YIELDS_TO`, tile rules) are not refitted: several were drawn from these
very timings on zoo layers, so the held-out networks' rows (in no fit and no rule's evidence)
are reported apart: they say whether the ranking generalises.

A solver timed in several runs counts at its newest timing (runs in commit order), which may
predate a change to its kernel or parameters (`same_params` says, where the run recorded them,
whether they are the ones the ranking gives now); tagged tile variants (NAME@tile), wrong
results (relative L2 error above 1e-2) and solvers that no longer apply are left out. A choice
whose solver was not timed on the layer is counted, not scored (`unscored`).

    python bench/ranking_zoo.py [--out bench/results/ranking_zoo_sm9084] [--target sm90-132]
        [--json]
    python bench/ranking_zoo.py --compare OLD.json NEW.json [--out STEM] [--json]

`--compare` takes two such results (of two trees) and says, of the layers both scored, whose
choice moved, per (old, new) solver pair and per set: how many, and the geomean of the chosen
solver's time over cuDNN's before and after; how many moved to a slower choice (over 5%) and
by how much at most; and how many choices moved to a solver not timed.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from _results import read_json  # noqa: E402 - bench/_results.py, beside this file

#: Runs whose FP32 rows timed cuDNN with TF32 on (solver_alternatives.py left cuDNN's default
#: before it set the math per type): their times over cuDNN's are kept apart from IEEE ones.
TF32_PEER = frozenset({"alternatives_blas_fp32_h200.json.gz",
                       "alternatives_smallc2d_fp32_h200.json"})
#: The committed H200 runs read: solver_alternatives.py's (several solvers a layer) and
#: zoo.py's (the runtime's pick a layer, at the tree it ran).
RUNS = ("bench/results/alternatives_*_h200.json*", "bench/results/zoo_h200*.json*")
MAX_ERR = 1e-2  # a result further than this from cuDNN's is no timing of the convolution
WORST = 15  # rows named in the report
SLOWER = 1.05  # a moved choice this much slower than the old one counts as slower


def _commit_time(path: Path) -> float:
    """When `path` was last committed (its mtime outside a checkout)."""
    try:
        out = subprocess.run(["git", "log", "-1", "--format=%ct", "--", str(path)], cwd=ROOT,
                             capture_output=True, text=True, timeout=30, check=False).stdout
        return float(out.strip() or path.stat().st_mtime)
    except (OSError, ValueError, subprocess.SubprocessError):
        return path.stat().st_mtime


def runtime_solvers() -> dict[str, Any]:
    """{name: solver} of a CUDA runtime where cuBLAS loads: the registry and the GEMM-library
    solvers it offers there (solvers.library_solvers), which then claim first place."""
    from miopenkernels.solvers import offer_library

    return {s.name: s for s in offer_library()}


def _row_timings(row: dict[str, Any]) -> dict[str, tuple[float, Any]]:
    """{solver: (its GPU time over cuDNN's in the same run, params or None)} of one committed
    row: a solver_alternatives.py row's every solver, a zoo.py row's pick. Wrong results
    (relative L2 error above MAX_ERR) and rows without cuDNN's time give none."""
    cudnn = row.get("cudnn_gpu_ms")
    if not cudnn or cudnn <= 0:
        return {}
    if "solvers" in row:
        return {name: (float(t["gpu_ms"]) / cudnn, t.get("params"))
                for name, t in row["solvers"].items()
                if t.get("gpu_ms") and t.get("rel_err") is not None and t["rel_err"] <= MAX_ERR}
    ms, err = row.get("ours_gpu_ms"), row.get("rel_err")
    if not ms or err is None or not err <= MAX_ERR or not row.get("solver"):
        return {}
    return {row["solver"]: (float(ms) / cudnn, None)}


def load_timings(paths: list[Path]) -> dict[tuple, dict[str, Any]]:
    """{(network, layer, case, n, peer): {"held_out", "key", "solvers": {name: (time over
    cuDNN's, params, file)}}}, each solver at its newest timing (files in commit order); `peer`
    says what the cuDNN times are ("cuDNN TF32" for the FP32 rows of TF32_PEER's runs, kept
    apart from the others)."""
    known = runtime_solvers()
    out: dict[tuple, dict[str, Any]] = {}
    for path in sorted(paths, key=_commit_time):
        for row in read_json(path).get("rows", ()):
            peer = "cuDNN TF32" if path.name in TF32_PEER and row["case"].startswith("FP32-") \
                else "cuDNN"
            ident = (row["network"], row["layer"], row["case"], int(row["n"]), peer)
            entry = out.setdefault(ident, {"held_out": bool(row.get("held_out")),
                                           "key": row["key"], "solvers": {}})
            for name, (ratio, params) in _row_timings(row).items():
                if name in known:  # not a tile variant (NAME@tile) or a solver since removed
                    entry["solvers"][name] = (ratio, params, path.name)
    return out


def _problem(layers: dict[tuple[str, str], Any], ident: tuple) -> Any:
    """The problem a timing row measured (the zoo layer, at its case and batch; a TF32 case
    is the FP32 problem under the TF32 math mode, `_solvers_here`)."""
    import zoo

    network, name, case, n, _ = ident
    layer = layers.get((network, name))
    if layer is None:
        return None
    type_name, direction, layout = case.split("-")
    return zoo.layer_problem(layer, type_name, direction,
                             {"NCDHW": "NCHW", "NDHWC": "NHWC"}.get(layout, layout), n)


def layer_id(p: Any) -> tuple:
    """A layer's identity whatever its batch size, element type, layout and direction (2-D
    and 3-D alike)."""
    return (p.c, p.k, p.in_spatial, p.filter, p.pad, p.stride, p.dilation, p.groups, p.mode)


def _solvers_here(known: dict[str, Any], case: str) -> dict[str, Any]:
    """The solvers a runtime offers a case: TF32 ones only under the TF32 math mode (the
    `TF32-...` cases), as `ExecutionContext.applicable_solvers` does."""
    tf32 = case.startswith("TF32-")
    return {name: s for name, s in known.items()
            if tf32 or getattr(s, "math", "ieee") != "tf32"}


def _models(networks: set[str], layers: dict[tuple[str, str], Any]) -> dict[str, Any]:
    """{network: the ranking model fitted without it} for the networks whose layers the
    model's samples hold; the others take the shipped model."""
    from miopenkernels.builder.ranking import (
        REPO_BENCH,
        REPO_LOGS,
        load_hardware,
        load_samples,
        measured_folders,
    )
    from miopenkernels.db.perfdb import PerfDbFile
    from ranking_eval import model_without

    folders = measured_folders(ROOT / "dbs")
    samples = load_samples(sorted(ROOT.glob(REPO_LOGS)), folders, sorted(ROOT.glob(REPO_BENCH)))
    folder = folders[0]
    perf = PerfDbFile.read(folder / f"{folder.name}.db.txt")
    by_problem: dict[str, list] = defaultdict(list)
    for s in samples:
        by_problem[s.problem.key()].append(s)
    sampled = {layer_id(s.problem) for s in samples}
    hardware = load_hardware()
    models = {}
    for net in sorted(networks):
        held = {layer_id(layer.problem) for (n, _), layer in layers.items() if n == net}
        if held & sampled:
            train = [s for s in samples if layer_id(s.problem) not in held]
            models[net] = model_without(net, train, by_problem, perf, hardware)
    return models


def score(timings: dict[tuple, dict[str, Any]], target_name: str) -> dict[str, Any]:
    """Every timed layer's row: the runtime's first choice and its regret."""
    import zoo
    from miopenkernels.ranking import load_model, rank_candidates
    from miopenkernels.target import Target
    from ranking_replay import package_at_hand
    from rich.progress import Progress

    target = Target.parse(target_name)
    layers = {(layer.network, layer.name): layer for layer in zoo.load_layers(held_out=True)}
    known = runtime_solvers()
    in_package = package_at_hand(known.values(), target)
    networks = {ident[0] for ident in timings}
    models = _models(networks, layers)
    shipped_model = load_model()
    rows, unscored, skipped = [], [], 0
    with Progress(transient=True) as bar:
        task = bar.add_task("ranking", total=len(timings))
        for ident, entry in sorted(timings.items()):
            bar.advance(task)
            p = _problem(layers, ident)
            here = _solvers_here(known, ident[2])
            timed = {name: t for name, t in entry["solvers"].items()
                     if p is not None and name in here and here[name].is_applicable(p, target)}
            if len(timed) < 2:
                skipped += 1
                continue

            solvers = [s for s in here.values() if s.is_applicable(p, target)]
            ranked = rank_candidates(p, target, solvers,
                                     lambda s, q, p=p: in_package(s, q, p),
                                     model=models.get(ident[0], shipped_model))
            network, layer, case, n, peer = ident
            base = {"network": network, "layer": layer, "case": case, "n": n, "peer": peer,
                    "held_out": entry["held_out"], "classes": list(zoo.layer_classes(p))}
            if not ranked or ranked[0].solver.name not in timed:
                unscored.append({**base, "chosen": ranked[0].solver.name if ranked else None,
                                 "timed": sorted(timed)})
                continue
            chosen = ranked[0]
            ratio, params, source = timed[chosen.solver.name]
            best = min(timed, key=lambda name: timed[name][0])
            rows.append({**base, "chosen": chosen.solver.name, "fastest": best,
                         "chosen_vs_cudnn": round(ratio, 4),
                         "fastest_vs_cudnn": round(timed[best][0], 4),
                         "same_params": None if params is None else
                         [int(v) for v in params] == [int(v) for v in chosen.params],
                         "timed": {k: [round(v[0], 4), v[2]] for k, v in sorted(timed.items())},
                         "regret": max(0.0, ratio / timed[best][0] - 1.0)})
    return {"rows": rows, "unscored": unscored, "skipped": skipped,
            "refitted": sorted(models)}


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    if not rows:
        return {"problems": 0}
    regrets = [float(r["regret"]) for r in rows]
    ordered = sorted(regrets)
    p95 = ordered[min(len(ordered) - 1, math.ceil(0.95 * len(ordered)) - 1)]
    return {"problems": len(rows),
            "top1": round(sum(r["chosen"] == r["fastest"] for r in rows) / len(rows), 4),
            "regret_mean": round(statistics.fmean(regrets), 4),
            "regret_geomean": round(math.exp(statistics.fmean(math.log1p(r) for r in regrets))
                                    - 1, 4),
            "regret_p95": round(p95, 4),
            "regret_max": round(max(regrets), 4)}


def report(result: dict[str, Any]) -> dict[str, Any]:
    rows = result["rows"]
    groups: dict[str, dict[str, list]] = {"sets": defaultdict(list), "networks": defaultdict(list),
                                          "cases": defaultdict(list),
                                          "classes": defaultdict(list)}
    for r in rows:
        part = "held out" if r["held_out"] else "zoo"
        groups["sets"][part].append(r)
        groups["networks"][r["network"] + (" (held out)" if r["held_out"] else "")].append(r)
        tf32 = " (against cuDNN TF32)" if r.get("peer") == "cuDNN TF32" else ""
        groups["cases"][f"{r['case']}{tf32} {part}"].append(r)
        for c in r["classes"]:
            groups["classes"][f"{c} {part}"].append(r)
    return {name: {k: summarise(v) for k, v in sorted(g.items())} for name, g in groups.items()}


def _table(title: str, summaries: dict[str, Any]) -> list[str]:
    lines = [f"| {title} | problems | top-1 | regret mean | regret geomean | regret p95 | "
             "regret max |", "| --- | --- | --- | --- | --- | --- | --- |"]
    for name, s in summaries.items():
        if s.get("problems"):
            lines.append(f"| {name} | {s['problems']} | {100 * s['top1']:.1f}% | "
                         f"{100 * s['regret_mean']:.1f}% | {100 * s['regret_geomean']:.1f}% | "
                         f"{100 * s['regret_p95']:.1f}% | {100 * s['regret_max']:.0f}% |")
    return lines + [""]


def markdown(meta: dict[str, Any], result: dict[str, Any], summary: dict[str, Any]) -> str:
    rows = result["rows"]
    lines = [f"Miss ranking over the zoo's timed solvers, leave one network out, "
             f"{meta['target']} ({len(rows)} layers scored, {len(result['unscored'])} whose "
             f"choice was not timed, {result['skipped']} with fewer than two solvers that "
             f"apply). Refitted without their own layers: "
             f"{', '.join(result['refitted']) or 'none'}; the rest on the shipped model.", ""]
    lines += _table("set", summary["sets"]) + _table("network", summary["networks"])
    lines += _table("case", summary["cases"]) + _table("class", summary["classes"])
    lines += ["Worst choices:", "",
              "| network | layer | case | n | chosen | fastest | regret |",
              "| --- | --- | --- | --- | --- | --- | --- |"]
    for r in sorted(rows, key=lambda r: -r["regret"])[:WORST]:
        lines.append(f"| {r['network']} | {r['layer']} | {r['case']} | {r['n']} | "
                     f"{r['chosen']} | {r['fastest']} | {100 * r['regret']:.0f}% |")
    return "\n".join(lines) + "\n"


def _gm(values: list[float]) -> float:
    return round(math.exp(statistics.fmean(math.log(v) for v in values)), 4)


def compare(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """The layers whose choice moved between two results (see the module's text)."""
    def index(rows: list[dict[str, Any]]) -> dict[tuple, dict[str, Any]]:
        return {(r["network"], r["layer"], r["case"], r["n"], r.get("peer", "cuDNN")): r
                for r in rows}

    a, b = index(old["rows"]), index(new["rows"])
    moved = sorted(k for k in a.keys() & b.keys() if a[k]["chosen"] != b[k]["chosen"])
    groups: dict[str, list[tuple]] = defaultdict(list)
    for k in moved:
        part = ("held out" if b[k]["held_out"] else "zoo") + \
            (", against cuDNN TF32" if b[k].get("peer") == "cuDNN TF32" else "")
        groups[part].append(k)
        groups[f"{a[k]['chosen']} -> {b[k]['chosen']} ({part})"].append(k)
    untimed = [k for k in index(new["unscored"]).keys() & a.keys()]
    slower = [b[k]["chosen_vs_cudnn"] / a[k]["chosen_vs_cudnn"] for k in moved
              if b[k]["chosen_vs_cudnn"] > SLOWER * a[k]["chosen_vs_cudnn"]]
    return {"scored_in_both": len(a.keys() & b.keys()), "moved": len(moved),
            "slower": len(slower), "most_slower": round(max(slower, default=1.0), 3),
            "groups": {g: {"layers": len(ks),
                           "old_vs_cudnn": _gm([a[k]["chosen_vs_cudnn"] for k in ks]),
                           "new_vs_cudnn": _gm([b[k]["chosen_vs_cudnn"] for k in ks])}
                       for g, ks in sorted(groups.items())},
            "moved_to_untimed": len(untimed),
            "moved_to_untimed_by_pair": {
                f"{x} -> {y}": n for (x, y), n in sorted(
                    Counter((a[k]["chosen"], c) for k in untimed
                            for c in [index(new["unscored"])[k]["chosen"]]).items())},
            "rows": [{"layer": list(k), "old": a[k]["chosen"], "new": b[k]["chosen"],
                      "old_vs_cudnn": a[k]["chosen_vs_cudnn"],
                      "new_vs_cudnn": b[k]["chosen_vs_cudnn"]} for k in moved]}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=HERE / "results" / "ranking_zoo_sm9084",
                    help="path stem of the .json and .md written")
    ap.add_argument("--target", default="sm90-132")
    ap.add_argument("--json", action="store_true", help="print the summary as JSON")
    ap.add_argument("--compare", nargs=2, type=Path, metavar=("OLD", "NEW"),
                    help="compare two results instead")
    args = ap.parse_args(argv)
    if args.compare:
        try:
            found = compare(*(read_json(p) for p in args.compare))
        except (OSError, ValueError, KeyError, TypeError) as exc:
            print(f"ranking_zoo: {args.compare[0]} and {args.compare[1]} are not two results "
                  f"of this script ({type(exc).__name__}: {exc})", file=sys.stderr)
            return 2
        if args.out != ap.get_default("out"):
            Path(str(args.out) + ".json").write_text(json.dumps(found, indent=1) + "\n")
        if args.json:
            print(json.dumps({k: v for k, v in found.items() if k != "rows"}))
            return 0
        print(f"{found['moved']} of {found['scored_in_both']} choices moved, "
              f"{found['slower']} of them slower (by up to {found['most_slower']:.2f}x); "
              f"{found['moved_to_untimed']} more to a solver not timed there")
        for g, v in found["groups"].items():
            print(f"  {v['layers']:4d}  {v['old_vs_cudnn']:.3f} -> {v['new_vs_cudnn']:.3f}  {g}")
        return 0
    paths = sorted(p for pattern in RUNS for p in ROOT.glob(pattern))
    if not paths:
        print(f"ranking_zoo: no timings match {', '.join(RUNS)}; run bench/zoo.py or "
              "bench/solver_alternatives.py on the device machine first", file=sys.stderr)
        return 2
    try:
        timings = load_timings(paths)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        print(f"ranking_zoo: a timing file is unreadable ({exc}); restore it from git",
              file=sys.stderr)
        return 3
    result = score(timings, args.target)
    summary = report(result)
    meta = {"target": args.target, "files": [p.name for p in paths],
            "method": __doc__.split("\n\n")[1]}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    Path(str(args.out) + ".json").write_text(
        json.dumps({**meta, "summary": summary, **result}, indent=1) + "\n")
    Path(str(args.out) + ".md").write_text(markdown(meta, result, summary))
    if args.json:
        print(json.dumps(summary))
    else:
        print(Path(str(args.out) + ".md").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
