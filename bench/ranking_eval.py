"""The miss ranking, evaluated on problems it was not fitted on (leave one network out).

For each network (a shipped manifest, and the ResNet-50 batch-32 bench layers), the model is
fitted on the timings of every problem outside it and asked to choose, for each of the network's
problems with a FindDb record, one (solver, parameters) among the candidates a package ships as
dynamic kernels (each solver's defaults and the parameter sets tuned on the other networks) whose
time was measured. Reported per network and overall:
- top-1: the chosen solver is the fastest measured one (the FindDb record's first, or a
  tensor-core solver that bench/triton_conv.py timed faster at the same problem);
- regret: measured time of the choice / the fastest measured time - 1 (the record's time is the
  best that tuning found, over every parameter set it tried): mean, geometric mean, p95.

The same is done over the candidate timings at small batch sizes (bench/candidate_timings.py,
tune_*/small_batch*.tune.json.gz: every candidate of a problem timed, so the best is known
without a record): for each network those logs cover, nothing of its layers (any batch, type or
layout) trains, and the runtime's choice among the timed candidates is scored against the
fastest of them ("small_batch" in the output, also per batch size).

    python bench/ranking_eval.py [--out bench/results/ranking_eval_sm9084] [--json]
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import statistics
import sys
from collections import defaultdict
from dataclasses import replace
from pathlib import Path

import numpy as np
from miopenkernels.builder.manifest import available_manifests, load_manifest
from miopenkernels.builder.ranking import (
    REPO_BENCH,
    REPO_LOGS,
    Sample,
    fit,
    load_hardware,
    load_samples,
    measured_folders,
)
from miopenkernels.db.finddb import FindDbFile
from miopenkernels.db.perfdb import PerfDbFile
from miopenkernels.problem import ConvProblem
from miopenkernels.ranking import RankingModel, rank_candidates

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def networks() -> dict[str, set[str]]:
    """{network: FindDb keys of its problems}."""
    out = {name: {p.key() for p in load_manifest(name)} for name in available_manifests()}
    out["resnet50_b32"] = {p.key() for p in load_manifest(HERE / "resnet50_b32.txt")}
    return out


def _p95(values: list[float]) -> float:
    return float(np.percentile(np.array(values), 95)) if values else math.nan


def model_without(net: str, train: list[Sample], by_problem: dict[str, list[Sample]],
                  perf: PerfDbFile, hardware: dict) -> RankingModel:
    """The model fitted on `train` alone, with the parameter sets a package would ship: those
    tuned on the training problems, most frequent first (as builder.ranking.tuned_params
    orders them)."""
    counts: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for key in sorted({s.problem.key() for s in train}):
        for solver, params in perf.load(by_problem[key][0].problem).items():
            counts[solver][params] += 1
    shipped = {solver: sorted(c, key=lambda p, c=c: (-c[p], p)) for solver, c in counts.items()}
    return RankingModel(fit(train, hardware, dict(shipped)), f"without {net}")


def evaluate(samples: list[Sample], records: FindDbFile, perf: PerfDbFile,
             nets: dict[str, set[str]]) -> dict[str, object]:
    hardware = load_hardware()
    by_problem: dict[str, list[Sample]] = defaultdict(list)
    for s in samples:
        by_problem[s.problem.key()].append(s)
    per_net = {}
    all_rows = []
    for net, keys in sorted(nets.items()):
        # Nothing of the held-out network trains: none of its layers at any batch size.
        layers = {by_problem[k][0].problem.with_batch(1).key() for k in keys if k in by_problem}
        train = [s for s in samples if s.problem.with_batch(1).key() not in layers]
        model = model_without(net, train, by_problem, perf, hardware)
        rows = []
        for key in sorted(keys):
            record = records.records.get(key)
            if record is None or key not in by_problem:
                continue
            measured = {(s.solver.name, s.params): s for s in by_problem[key]}
            # The best measured: the record's fastest, or a faster timing of another solver
            # (the tensor-core kernels' benchmark covers solvers the record predates).
            fastest = min(by_problem[key], key=lambda s: s.ms)
            best_ms, found = record.solutions[0].time, record.solutions[0].solver
            if fastest.ms < best_ms:
                best_ms, found = fastest.ms, fastest.solver.name
            problem = by_problem[key][0].problem
            target = by_problem[key][0].target
            # The runtime's own choice (rank_candidates) among the measured candidates.
            solvers = list({s.solver.name: s.solver for s in by_problem[key]}.values())
            ranked = rank_candidates(problem, target, solvers,
                                     lambda solver, params, m=measured: (solver.name, params) in m,
                                     model=model)
            if not ranked:
                continue
            choice = (ranked[0].time, measured[(ranked[0].solver.name, ranked[0].params)])
            chosen = choice[1]
            rows.append({"key": key, "found": found, "chosen": chosen.solver.name,
                         "params": ",".join(map(str, chosen.params)),
                         "best_ms": best_ms, "chosen_ms": chosen.ms,
                         "regret": max(0.0, chosen.ms / best_ms - 1.0)})
        per_net[net] = summarise(rows)
        all_rows += rows
        print(f"{net:14s} {fmt(per_net[net])}", flush=True)
    overall = summarise(all_rows)
    print(f"{'all':14s} {fmt(overall)}")
    return {"networks": per_net, "overall": overall, "rows": all_rows}


def layer_of(problem: ConvProblem) -> str:
    """A layer's identity whatever its batch size, element type and layout."""
    return replace(problem, n=1, in_layout="NCHW", wei_layout="NCHW", out_layout="NCHW",
                   in_type="FP32", wei_type="FP32", out_type="FP32").key()


def evaluate_small_batch(samples: list[Sample], log_paths: list[Path],
                         perf: PerfDbFile) -> dict[str, object]:
    """Leave one network out over the candidate timings' problems (see the module's text)."""
    keys: set[str] = set()
    nets: set[str] = set()
    for path in log_paths:
        with gzip.open(path, "rt") as fh:
            data = json.load(fh)
        nets.update(data.get("networks", ()))
        keys.update(t["key"] for t in data.get("timings", ()) if t.get("time_ms"))
    hardware = load_hardware()
    by_problem: dict[str, list[Sample]] = defaultdict(list)
    for smp in samples:
        by_problem[smp.problem.key()].append(smp)
    per_net, per_batch, all_rows = {}, defaultdict(list), []
    for net in sorted(nets):
        held = {layer_of(p) for p in load_manifest(net)}
        train = [smp for smp in samples if layer_of(smp.problem) not in held]
        model = model_without(net, train, by_problem, perf, hardware)
        rows = []
        for key in sorted(keys):
            timed = by_problem.get(key, [])
            if len(timed) < 2 or layer_of(timed[0].problem) not in held:
                continue
            measured = {(smp.solver.name, smp.params): smp for smp in timed}
            solvers = list({smp.solver.name: smp.solver for smp in timed}.values())
            ranked = rank_candidates(timed[0].problem, timed[0].target, solvers,
                                     lambda solver, params, m=measured: (solver.name, params) in m,
                                     model=model)
            if not ranked:
                continue
            chosen = measured[(ranked[0].solver.name, ranked[0].params)]
            fastest = min(timed, key=lambda smp: smp.ms)
            rows.append({"key": key, "found": fastest.solver.name, "chosen": chosen.solver.name,
                         "params": ",".join(map(str, chosen.params)), "best_ms": fastest.ms,
                         "chosen_ms": chosen.ms,
                         "regret": max(0.0, chosen.ms / fastest.ms - 1.0)})
            per_batch[timed[0].problem.n].append(rows[-1])
        per_net[net] = summarise(rows)
        all_rows += rows
        print(f"small batch {net:14s} {fmt(per_net[net])}", flush=True)
    overall = summarise(all_rows)
    print(f"small batch {'all':14s} {fmt(overall)}")
    return {"networks": per_net, "batches": {str(n): summarise(r)
                                             for n, r in sorted(per_batch.items())},
            "overall": overall}


def summarise(rows: list[dict[str, object]]) -> dict[str, float]:
    regrets = [float(r["regret"]) for r in rows]  # type: ignore[arg-type]
    if not rows:
        return {"problems": 0}
    return {"problems": len(rows),
            "top1": round(sum(r["chosen"] == r["found"] for r in rows) / len(rows), 4),
            "regret_mean": round(statistics.fmean(regrets), 4),
            "regret_geomean": round(math.exp(statistics.fmean(math.log1p(r) for r in regrets))
                                    - 1, 4),
            "regret_p95": round(_p95(regrets), 4),
            "regret_max": round(max(regrets), 4)}


def fmt(s: dict[str, float]) -> str:
    if not s.get("problems"):
        return "no problems"
    return (f"{s['problems']:4d} problems  top-1 {100 * s['top1']:5.1f}%  regret mean "
            f"{100 * s['regret_mean']:5.1f}%  geomean {100 * s['regret_geomean']:5.1f}%  "
            f"p95 {100 * s['regret_p95']:5.1f}%")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=HERE / "results" / "ranking_eval_sm9084")
    ap.add_argument("--json", action="store_true", help="print the summary as JSON")
    args = ap.parse_args()
    folders = measured_folders(ROOT / "dbs")
    samples = load_samples(sorted(ROOT.glob(REPO_LOGS)), folders, sorted(ROOT.glob(REPO_BENCH)))
    folder = folders[0]
    records = FindDbFile.read(folder / f"{folder.name}.HIP.fdb.txt")
    perf = PerfDbFile.read(folder / f"{folder.name}.db.txt")
    result = evaluate(samples, records, perf, networks())
    small_logs = sorted(ROOT.glob("bench/results/tune_*/small_batch*.tune.json.gz"))
    result["small_batch"] = evaluate_small_batch(samples, small_logs, perf)
    meta = {"target": folder.name, "samples": len(samples), "method": __doc__.split("\n\n")[1]}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    Path(str(args.out) + ".json").write_text(json.dumps({**meta, **result}, indent=1) + "\n")
    lines = [f"Miss ranking, leave one network out, {folder.name} ({len(samples)} timings).", "",
             "| network | problems | top-1 | regret mean | regret geomean | regret p95 |",
             "| --- | --- | --- | --- | --- | --- |"]
    for net, s in [*result["networks"].items(), ("all", result["overall"])]:  # type: ignore
        if s.get("problems"):
            lines.append(f"| {net} | {s['problems']} | {100 * s['top1']:.1f}% | "
                         f"{100 * s['regret_mean']:.1f}% | {100 * s['regret_geomean']:.1f}% | "
                         f"{100 * s['regret_p95']:.1f}% |")
    small = result["small_batch"]
    lines += ["", "Candidate timings at small batch sizes (tune_*/small_batch*): the choice "
              "among every timed candidate against the fastest, leave one network out.", "",
              "| network or batch | problems | top-1 | regret mean | regret geomean | regret p95 |",
              "| --- | --- | --- | --- | --- | --- |"]
    for net, s in [*small["networks"].items(),  # type: ignore[union-attr]
                   *((f"batch {n}", v) for n, v in small["batches"].items()),  # type: ignore
                   ("all", small["overall"])]:  # type: ignore[index]
        if s.get("problems"):
            lines.append(f"| {net} | {s['problems']} | {100 * s['top1']:.1f}% | "
                         f"{100 * s['regret_mean']:.1f}% | {100 * s['regret_geomean']:.1f}% | "
                         f"{100 * s['regret_p95']:.1f}% |")
    Path(str(args.out) + ".md").write_text("\n".join(lines) + "\n")
    if args.json:
        print(json.dumps({"records": result["overall"], "small_batch": small["overall"]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
