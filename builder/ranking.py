"""Fit the miss ranking (library/ranking.py) on measured timings; write dbs/ranking.json.

Samples are every timing the tuning runs recorded: the gzipped `*.tune.json.gz` logs (each
candidate parameter set of each tunable solver, and each solver's final time), the measured
databases under `dbs/<basename>/` (a FindDb record's time per solver at the PerfDb's parameters,
for runs whose log is lost) and the tensor-core kernel benchmarks
(`bench/results/triton_kernels_*.json` of bench/triton_conv.py: every tile configuration tried
on every layer, type, direction and layout, as the ConvTritonImplicitGemm* solvers run them;
only correct, one-launch (SPLIT_K 1) timings count). Repeated timings of one (problem, solver,
parameters) are reduced to their median. Each solver name gets a ridge least-squares fit of
`log(ms)` on the features; `"*"` is the pooled fit over every solver. The hardware table
(dbs/hardware.toml) is copied in so that the runtime reads one JSON file.

    python -m miopenkernels.builder.ranking [--logs FILE ...] [--bench FILE ...] [--dbs DIR]
                                           [--out FILE] [--json]
"""

from __future__ import annotations

import argparse
import gzip
import json
import statistics
import sys
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
from miopenkernels.builder.manifest import held_out_keys
from miopenkernels.db.finddb import FindDbFile
from miopenkernels.db.perfdb import PerfDbFile
from miopenkernels.errors import MIOpenKernelsError
from miopenkernels.problem import ConvProblem
from miopenkernels.ranking import FEATURES, POOLED, Hardware, bias_key, features
from miopenkernels.solvers import get_solver
from miopenkernels.solvers.base import Params, Solver
from miopenkernels.target import Target

__all__ = ["Sample", "load_samples", "load_hardware", "fit", "main", "REPO_LOGS", "REPO_BENCH",
           "bench_samples"]

REPO_ROOT = Path(__file__).resolve().parent.parent
REPO_LOGS = "bench/results/tune_*/*.tune.json.gz"
REPO_BENCH = "bench/results/triton_kernels_*.json"
RIDGE = 1e-2  # chosen by bench/ranking_eval.py (leave one network out)
BIAS_SHRINK = 5  # a parameter set's bias is its residual sum / (count + this)
SLOPE_SHRINK = 20.0  # and its slope over log GEMM size is shrunk by this many squared units


@dataclass(frozen=True)
class Sample:
    """One measured time of (problem, solver, params) on a target."""

    problem: ConvProblem
    solver: Solver
    params: Params
    target: Target
    ms: float


def _dbs_root() -> Path:
    return Path(str(resources.files("miopenkernels.dbs")))


def load_hardware(path: Path | None = None) -> dict[str, dict[str, Any]]:
    """dbs/hardware.toml as {arch: figures}."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    file = path or _dbs_root() / "hardware.toml"
    data = tomllib.loads(file.read_text())
    out = {}
    for entry in data.get("gpu", []):
        arch = str(entry["arch"])
        out[arch] = {k: v for k, v in entry.items() if k != "arch"}
    return out


def _log_samples(paths: Iterable[Path]) -> dict[tuple[str, str, str, str], list[float]]:
    """{(target, key, solver, params): [ms...]} from tune logs."""
    out: dict[tuple[str, str, str, str], list[float]] = defaultdict(list)
    for path in paths:
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rt") as fh:
            data = json.load(fh)
        target = str(data["target"])
        for entry in data.get("timings", []):
            ms = entry.get("time_ms")
            if ms is None or not ms > 0:
                continue
            out[(target, entry["key"], entry["solver"], entry.get("params", ""))].append(float(ms))
    return out


def _config_params(name: str) -> str | None:
    """bench/triton_conv.py's `128x64x32 w4 s3 g8 k1` as the solvers' PerfDb text
    (BLOCK_M,BLOCK_N,BLOCK_K,GROUP_M,SPLIT_K,num_warps,num_stages); None if malformed."""
    try:
        tile, warps, stages, group, split = name.split()
        bm, bn, bk = (int(v) for v in tile.split("x"))
        values = (bm, bn, bk, int(group[1:]), int(split[1:]), int(warps[1:]), int(stages[1:]))
    except ValueError:
        return None
    return ",".join(str(v) for v in values)


def bench_samples(paths: Iterable[Path]) -> dict[tuple[str, str, str, str], list[float]]:
    """{(target, key, solver, params): [ms...]} from bench/triton_conv.py results: each tried
    configuration that was correct and ran as one launch (SPLIT_K 1, what the solvers run)."""
    from dataclasses import replace

    from miopenkernels.solvers._conv import DIRECTION_SUFFIX

    out: dict[tuple[str, str, str, str], list[float]] = defaultdict(list)
    for path in paths:
        data = json.loads(path.read_text())
        kind, arch, _ = data["target"]
        if kind != "cuda":
            continue  # AMD objects cannot run here: no such results exist
        target = f"sm{int(arch)}-{int(data['sms'])}"
        for row in data.get("rows", []):
            try:
                base = ConvProblem.from_key(str(row["problem"]))
                math_mode = "Tf32" if row["type"] == "TF32" else ""
                dtype = "FP32" if row["type"] == "TF32" else str(row["type"])
                layout = str(row["layout"])
                problem = replace(base, direction=str(row["direction"]), in_type=dtype,
                                  wei_type=dtype, out_type=dtype, in_layout=layout,
                                  wei_layout=layout, out_layout=layout)
                solver = f"ConvTritonImplicitGemm{math_mode}{DIRECTION_SUFFIX[problem.direction]}"
            except (MIOpenKernelsError, KeyError, TypeError, ValueError):
                continue
            for name, ms, _err, ok in row.get("tried", []):
                params = _config_params(str(name))
                if not ok or params is None or params.split(",")[4] != "1" or not ms > 0:
                    continue
                out[(target, problem.key(), solver, params)].append(float(ms))
    return out


def _db_samples(folder: Path) -> dict[tuple[str, str, str, str], list[float]]:
    """FindDb times at the PerfDb's parameters (defaults where the PerfDb has none)."""
    base = folder.name
    out: dict[tuple[str, str, str, str], list[float]] = defaultdict(list)
    fdb = folder / f"{base}.HIP.fdb.txt"
    if not fdb.is_file():
        return out
    target = Target.parse(base)
    perf_path = next((p for p in (folder / f"{base}.db", folder / f"{base}.db.txt")
                      if p.is_file()), None)
    perf = PerfDbFile.read(perf_path) if perf_path else PerfDbFile()
    for record in FindDbFile.read(fdb):
        try:
            problem = ConvProblem.from_key(record.key)
        except MIOpenKernelsError:
            continue
        tuned = perf.load(problem)
        for sol in record.solutions:
            try:
                solver = get_solver(sol.solver)
            except MIOpenKernelsError:
                continue
            params = tuned.get(sol.solver)
            if params is None:
                params = solver.params_to_string(solver.default_params(problem, target))
            out[(target.name, record.key, sol.solver, params)].append(float(sol.time))
    return out


def load_samples(log_paths: Sequence[Path], db_folders: Sequence[Path],
                 bench_paths: Sequence[Path] = ()) -> list[Sample]:
    """Every measured timing, one sample per (target, problem, solver, params) (median), but
    none of a held-out layer (builder.manifest.held_out_keys)."""
    merged = _log_samples(log_paths)
    for sample_key, times in bench_samples(bench_paths).items():
        merged[sample_key].extend(times)
    logged = {(t, k) for t, k, _, _ in merged}
    for folder in db_folders:
        for (t, k, s, p), times in _db_samples(folder).items():
            if (t, k) not in logged:  # a log holds the same final times and more
                merged[(t, k, s, p)].extend(times)
    samples = []
    held_out = held_out_keys()  # the zoo's held-out layers stay out of the fit
    for (target, key, solver_name, params_text), times in sorted(merged.items()):
        try:
            solver = get_solver(solver_name)
            problem = ConvProblem.from_key(key)
            params = tuple(solver.params_from_string(params_text))
        except MIOpenKernelsError:
            continue
        if problem.with_batch(1).key() in held_out:
            continue
        samples.append(Sample(problem, solver, params, Target.parse(target),
                              float(statistics.median(times))))
    return samples


def _hw(hardware: dict[str, dict[str, Any]], target: Target) -> Hardware:
    return Hardware.from_entry(hardware[target.arch], target.cu)


def design(samples: Sequence[Sample], hardware: dict[str, dict[str, Any]]
           ) -> tuple[np.ndarray, np.ndarray]:
    """(feature matrix, log ms) of the samples."""
    rows = [features(s.problem, s.solver, s.params, _hw(hardware, s.target)) for s in samples]
    x = np.array(rows, dtype=np.float64).reshape(len(rows), len(FEATURES))
    y = np.log(np.array([s.ms for s in samples], dtype=np.float64))
    return x, y


def _ridge(x: np.ndarray, y: np.ndarray) -> list[float]:
    a = x.T @ x + RIDGE * len(y) * np.diag([0.0] + [1.0] * (x.shape[1] - 1))
    w = np.linalg.solve(a + 1e-9 * np.eye(x.shape[1]), x.T @ y)
    return [round(float(v), 6) for v in w]


MN_INDEX = FEATURES.index("log_gemm_mn")


def _bias(pairs: list[tuple[float, float]]) -> list[float]:
    """A parameter set's (offset, slope, centre) from its (log_gemm_mn, residual) pairs: the
    mean residual and its slope over the problem's GEMM size, both shrunk towards zero (by
    BIAS_SHRINK samples and SLOPE_SHRINK squared log units): a large tile may gain on large
    problems what it loses on small ones."""
    n = len(pairs)
    center = sum(x for x, _ in pairs) / n
    offset = sum(r for _, r in pairs) / (n + BIAS_SHRINK)
    sxx = sum((x - center) ** 2 for x, _ in pairs)
    slope = sum((x - center) * r for x, r in pairs) / (sxx + SLOPE_SHRINK)
    return [round(offset, 5), round(slope, 5), round(center, 4)]


def fit(samples: Sequence[Sample], hardware: dict[str, dict[str, Any]],
        shipped_params: dict[str, list[str]] | None = None) -> dict[str, Any]:
    """The model file's content: weights per solver and pooled, params, hardware."""
    if not samples:
        raise MIOpenKernelsError("no timings to fit the ranking on")
    x, y = design(samples, hardware)
    by_solver: dict[str, list[int]] = defaultdict(list)
    for i, s in enumerate(samples):
        by_solver[s.solver.name].append(i)
    weights: dict[str, list[float]] = {POOLED: _ridge(x, y)}
    residual: dict[str, float] = {}
    bias: dict[str, dict[str, list[float]]] = {}
    for name, idx in sorted(by_solver.items()):
        if len(idx) < 2 * len(FEATURES):
            continue
        w = _ridge(x[idx], y[idx])
        weights[name] = w
        pred = x[idx] @ np.array(w)
        residual[name] = round(float(np.sqrt(np.mean((pred - y[idx]) ** 2))), 4)
        groups: dict[str, list[tuple[float, float]]] = defaultdict(list)
        for i, r in zip(idx, y[idx] - pred, strict=True):
            key = bias_key(samples[i].problem,
                           samples[i].solver.params_to_string(samples[i].params))
            groups[key].append((float(x[i, MN_INDEX]), float(r)))
        bias[name] = {p: _bias(pairs) for p, pairs in sorted(groups.items()) if p}
    return {
        "features": list(FEATURES),
        "weights": weights,
        "bias": bias,
        "params": shipped_params or {},
        "hardware": hardware,
        "fit": {"samples": len(samples), "problems": len({s.problem for s in samples}),
                "targets": sorted({s.target.name for s in samples}),
                "rms_log_residual": residual},
    }


def tuned_params(db_folders: Sequence[Path]) -> dict[str, list[str]]:
    """{solver: PerfDb params texts}, most frequent first: the sets a build ships dynamically."""
    counts: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for folder in db_folders:
        base = folder.name
        path = next((p for p in (folder / f"{base}.db", folder / f"{base}.db.txt")
                     if p.is_file()), None)
        if path is None:
            continue
        for entries in PerfDbFile.read(path).records.values():
            for solver, params in entries.items():
                counts[solver][params] += 1
    return {s: sorted(c, key=lambda p: (-c[p], p)) for s, c in sorted(counts.items())}


def measured_folders(root: Path | None = None) -> list[Path]:
    """Every `dbs/<basename>/` that holds a measured FindDb."""
    base = root or _dbs_root()
    return sorted(p for p in base.iterdir()
                  if p.is_dir() and (p / f"{p.name}.HIP.fdb.txt").is_file())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m miopenkernels.builder.ranking",
                                 description="Fit the miss ranking on measured timings.")
    ap.add_argument("--logs", nargs="*", type=Path,
                    help=f"tune logs (default: {REPO_LOGS} of the checkout)")
    ap.add_argument("--bench", nargs="*", type=Path,
                    help=f"tensor-core kernel benchmarks (default: {REPO_BENCH} of the checkout)")
    ap.add_argument("--dbs", type=Path, help="folder of dbs/<basename>/ (default: dbs/)")
    ap.add_argument("--out", type=Path, help="model file (default: dbs/ranking.json)")
    ap.add_argument("--json", action="store_true", help="print the fit summary as JSON")
    args = ap.parse_args(argv)
    logs = args.logs if args.logs is not None else sorted(REPO_ROOT.glob(REPO_LOGS))
    bench = args.bench if args.bench is not None else sorted(REPO_ROOT.glob(REPO_BENCH))
    folders = measured_folders(args.dbs)
    try:
        model = fit(load_samples(logs, folders, bench), load_hardware(), tuned_params(folders))
    except MIOpenKernelsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    out = args.out or (args.dbs or _dbs_root()) / "ranking.json"
    from miopenkernels.db._lock import atomic_write

    atomic_write(out, (json.dumps(model, indent=1, sort_keys=True) + "\n").encode())
    summary = {"out": str(out), **model["fit"]}
    print(json.dumps(summary) if args.json else
          f"{out}: {summary['samples']} timings of {summary['problems']} problems, "
          f"{len(model['weights']) - 1} solvers")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
