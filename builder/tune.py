"""Tuning on a GPU: PerfDb parameters and FindDb records for a manifest's problems.

For each problem (deduplicated, optionally one shard of them) and each applicable solver whose
name matches the glob: a tunable solver's `param_space` is searched (defaults first, the space
thinned evenly, time-bounded; a candidate that fails to compile or launch scores infinity), then
every solver is timed with its best parameters (median of device-event timings) and the problem's
FindDb record lists them fastest first. Under the TF32 math mode an FP32 problem's record is
keyed with `_tf32` (`Handle.finddb_key`) and lists the TF32 solvers beside the IEEE ones; `maths`
tunes each FP32 problem under each mode it names. Results are written as shards named by basename:
`<basename>.db.txt` (text PerfDb) and/or `<basename>.db` (SQLite), `<basename>.HIP.fdb.txt`,
and every timing goes to `<basename>.tune.json`.

Inputs are random (never zeros) and drawn once into device buffers large enough for the biggest
problem; each problem uses their first bytes.
"""

from __future__ import annotations

import fnmatch
import json
import math
import platform
import statistics
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
from miopenkernels.config import MathMode
from miopenkernels.db.finddb import FindDbFile, FindDbRecord, Solution
from miopenkernels.db.perfdb import PerfDb, PerfDbFile
from miopenkernels.errors import MIOpenKernelsError, ProblemError
from miopenkernels.find import Invoker, make_invoker, search_params
from miopenkernels.problem import TYPE_BYTES, ConvProblem
from miopenkernels.tensor import DeviceTensor

__all__ = ["TuneResult", "tune", "select_shard", "tuning_items"]


@dataclass
class TuneResult:
    basename: str
    problems: int = 0
    tuned: int = 0  # problems fully measured
    skipped: list[str] = field(default_factory=list)  # keys not reached in the time limit
    perf_entries: int = 0
    files: list[Path] = field(default_factory=list)
    seconds: float = 0.0
    stopped: str = ""  # why the run stopped early: the GPU context was lost

    def to_dict(self) -> dict[str, Any]:
        return {"basename": self.basename, "problems": self.problems, "tuned": self.tuned,
                "not_reached": len(self.skipped), "perf_entries": self.perf_entries,
                "files": [str(f) for f in self.files], "seconds": round(self.seconds, 1),
                "stopped": self.stopped}


CONTEXT_LOST = ("CUDA_ERROR_ILLEGAL_ADDRESS", "CUDA_ERROR_LAUNCH_FAILED", "CUDA_ERROR_UNKNOWN",
                "CUDA_ERROR_ILLEGAL_INSTRUCTION", "CUDA_ERROR_MISALIGNED_ADDRESS",
                "CUDA_ERROR_HARDWARE_STACK_ERROR", "hipErrorIllegalAddress",
                "hipErrorLaunchFailure")
"""Driver errors after which the GPU context is unusable: every later timing would fail, so
tuning stops and writes what it measured before."""


def _context_lost(entries: list[dict[str, Any]]) -> str:
    for entry in entries:
        error = str(entry.get("error", ""))
        if any(code in error for code in CONTEXT_LOST):
            return f"{entry['solver']} on {entry['key']} ({entry['params']}): {error}"
    return ""


def select_shard(problems: list[ConvProblem], shard: str | None) -> list[ConvProblem]:
    """`I/N` keeps every N-th problem starting at I (0-based)."""
    if not shard:
        return problems
    try:
        i, n = (int(v) for v in shard.split("/"))
    except ValueError:
        raise ProblemError(f"--shard {shard!r} is not I/N (e.g. 0/4)") from None
    if not 0 <= i < n:
        raise ProblemError(f"--shard {shard!r}: I must be in 0..N-1")
    return problems[i::n]


def tuning_items(problems: list[ConvProblem], maths: tuple[MathMode, ...]
                 ) -> list[tuple[ConvProblem, MathMode]]:
    """(problem, math mode) pairs: an FP32 problem once per mode of `maths`, others once."""
    out = []
    for p in problems:
        modes = maths if "FP32" in p.data_type else maths[:1]
        out += [(p, m) for m in modes]
    return out


def _pool(handle: Any, problems: list[ConvProblem]) -> dict[str, DeviceTensor]:
    """Random device buffers big enough for x, w and y of every problem."""
    rng = np.random.default_rng()
    out = {}
    for role, attr in (("x", "in_shape"), ("w", "wei_shape"), ("y", "out_shape")):
        size = max(math.prod(getattr(p, attr)) * TYPE_BYTES[p.in_type] for p in problems)
        data = rng.standard_normal(size // 4 + 1).astype(np.float32) * 0.5
        buf = handle.backend.alloc(data.nbytes)
        handle.backend.copy_in(buf, data)
        out[role] = DeviceTensor(buf.ptr, data.nbytes, "", (data.nbytes,), buffer=buf)
    return out


def _time(handle: Any, inv: Invoker, ptrs: dict[str, int], repeats: int) -> float:
    def once() -> None:
        inv(ptrs)

    once()
    once()
    return float(statistics.median(handle.backend.time_ms(once, repeats)))


def tune(handle: Any, problems: list[ConvProblem], out: Path, *, solver_glob: str = "*",
         time_limit_s: float = 600.0, per_solver_s: float = 20.0, max_candidates: int = 48,
         repeats: int = 5, formats: tuple[str, ...] = ("text",),
         progress: Any = None, maths: tuple[MathMode, ...] | None = None,
         done: set[str] | None = None) -> TuneResult:
    """Tune `problems` on `handle`'s GPU and write the shards into `out`: under each math mode
    of `maths` (default: the handle's) for FP32 problems; records keyed in `done` are skipped."""
    start = time.perf_counter()
    basename = handle.basename
    out.mkdir(parents=True, exist_ok=True)
    # Tuning measures; it must not read earlier records of this machine.
    handle.perfdb = PerfDb(None, None)
    perf = PerfDbFile()
    find = FindDbFile()
    log: list[dict[str, Any]] = []
    modes = tuple(maths) if maths else (handle.math_mode,)
    items = []
    for problem, mode in tuning_items(problems, modes):
        handle.math_mode = mode
        if handle.finddb_key(problem) not in (done or ()):
            items.append((problem, mode, handle.finddb_key(problem)))
    result = TuneResult(basename, problems=len(items))
    pool = _pool(handle, [p for p, _m, _k in items]) if items else {}
    searched: dict[tuple[ConvProblem, str], tuple[int, ...]] = {}  # one search per mode pair
    for index, (problem, mode, key) in enumerate(items):
        if time.perf_counter() - start > time_limit_s:
            result.skipped += [k for _p, _m, k in items[index:]]
            break
        handle.math_mode = mode
        first_entry = len(log)
        solvers = [s for s in handle.applicable_solvers(problem)
                   if fnmatch.fnmatchcase(s.name, solver_glob)]
        bound = {r: pool[r] for r in ("x", "w", "y")}
        solutions = []
        for solver in solvers:
            params: tuple[int, ...] = tuple(solver.default_params(problem, handle.target))
            if solver.tunable and (problem, solver.name) in searched:
                params = searched[(problem, solver.name)]
            elif solver.tunable:
                params, best_ms = search_params(
                    handle, problem, solver, bound, time_limit_s=per_solver_s,
                    max_candidates=max_candidates, repeats=3, log_entries=log)
                if not math.isfinite(best_ms):
                    continue
                searched[(problem, solver.name)] = params
                perf.put(problem, solver.name, solver.params_to_string(params))
                result.perf_entries += 1
            entry: dict[str, Any] = {"solver": solver.name, "key": key,
                                     "params": solver.params_to_string(params), "final": True}
            inv: Invoker | None = None
            try:
                inv = make_invoker(handle, problem, solver, params=params, specialised=False)
                ptrs = {r: t.ptr for r, t in bound.items()}
                ptrs["workspace"] = 0
                if inv.workspace_bytes:
                    inv.workspace = inv.workspace or handle.backend.alloc(inv.workspace_bytes)
                    ptrs["workspace"] = inv.workspace.ptr
                ms = _time(handle, inv, ptrs, repeats)
                ws_bytes = inv.workspace_bytes
            except MIOpenKernelsError as exc:
                entry["error"] = str(exc).splitlines()[0][:300]
                log.append(entry)
                continue
            finally:
                if inv is not None:
                    inv.free_workspace()
            entry["time_ms"] = ms
            log.append(entry)
            solutions.append(Solution(solver.name, ms, ws_bytes,
                                      solver.algorithm(problem)))
        result.stopped = _context_lost(log[first_entry:])
        if result.stopped:  # this problem's timings after the loss are not worth a record
            result.skipped += [k for _p, _m, k in items[index:]]
            break
        ranked = sorted(solutions, key=lambda x: x.time)  # the record's order, fastest first
        if ranked:
            find.put(FindDbRecord(key, tuple(ranked)))
            result.tuned += 1
        if progress is not None:
            progress(index + 1, len(items), key, ranked)
    for t in pool.values():
        t.release()
    if "text" in formats:
        result.files.append(perf.write(out / f"{basename}.db.txt"))
    if "sqlite" in formats:
        result.files.append(perf.write(out / f"{basename}.db"))
    result.files.append(find.write(out / f"{basename}.HIP.fdb.txt"))
    result.seconds = time.perf_counter() - start
    meta = {
        "basename": basename, "target": handle.target.name,
        "device": handle.backend.device_name, "backend": handle.backend.name,
        "driver": getattr(handle.backend, "driver_version", ""),
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "host": platform.node(), "summary": result.to_dict(), "not_reached": result.skipped,
        "timings": log,
    }
    log_path = out / f"{basename}.tune.json"
    log_path.write_text(json.dumps(meta, indent=1) + "\n")
    result.files.append(log_path)
    return result
