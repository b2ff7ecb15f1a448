"""Many processes finding and tuning into one set of user databases, some killed with SIGKILL.

Each writer, in a loop over a few shared problems: stores a tuned parameter of the tunable
solver in the user PerfDb, then runs a NORMAL find (which reads that PerfDb for the tunable
solver while others write it, benchmarks every solver, stores the FindDb record and JIT-compiles
into the shared user kernel cache). The parent kills random writers in rounds and starts new
ones. Afterwards every FindDb record must name every solver, the SQLite files must be whole, and
one more write must leave no temporary file behind.

`python tests/unit/concurrent_find.py --writers 32 --seconds 120` runs a bigger round than the
unit test does and prints the counts as JSON.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing as mp
import os
import random
import signal
import sqlite3
import sys
import time
from pathlib import Path
from typing import Any

SOLVERS = ("Tun", "Plain")
PROBLEMS = 4096


def _env(root: Path) -> dict[str, str]:
    dirs = {"MIOPEN_SYSTEM_DB_PATH": root / "sys", "MIOPEN_USER_DB_PATH": root / "user",
            "MIOPEN_CUSTOM_CACHE_DIR": root / "cache"}
    for d in dirs.values():
        d.mkdir(parents=True, exist_ok=True)
    return {k: str(v) for k, v in dirs.items()}


def _handle() -> Any:
    from find_doubles import SM90, FakeCompiler, FakeSolver
    from miopenkernels.backends import NullBackend
    from miopenkernels.handle import Handle

    solvers = [FakeSolver("Tun", 1.0, tunable=True, space=(1, 2)), FakeSolver("Plain", 2.0)]
    backend = NullBackend(SM90)
    # Replayed device timings: a null backend with them is a timer, so finds record.
    backend.kernel_ms = {"tun_p1": 1.0, "tun_p2": 0.5, "plain_p0": 2.0}
    return Handle(backend=backend, compiler=FakeCompiler(), solvers=solvers)


def _problem(i: int) -> Any:
    from miopenkernels.problem import ConvProblem

    return ConvProblem(n=1, c=1 + i % PROBLEMS, k=2, in_spatial=(4, 4), filter=(1, 1))


def _writer(root: Path, seed: int, stop_at: Any, finds: Any) -> None:
    import numpy as np
    from miopenkernels.find import find

    os.environ.update(_env(root))
    for var in ("MIOPEN_FIND_MODE", "MIOPEN_FIND_ENFORCE", "MIOPEN_DISABLE_CACHE"):
        os.environ.pop(var, None)
    rng = random.Random(seed)
    h = _handle()
    while time.monotonic() < stop_at.value:
        p = _problem(rng.randrange(PROBLEMS))
        h.perfdb.store(p, "Tun", str(rng.choice((1, 2))))
        h.invokers.clear()  # read the PerfDb again on the next find, as a new process would
        x = np.zeros(p.in_shape, np.float32)
        w = np.zeros(p.wei_shape, np.float32)
        y = np.zeros(p.out_shape, np.float32)
        find(h, p, x, w, y, mode="NORMAL")
        with finds.get_lock():
            finds.value += 1


def run(root: Path, *, writers: int = 32, seconds: float = 8.0, kill_every: float = 1.0,
        seed: int = 0) -> dict[str, Any]:
    """Run the writers for `seconds`, killing some every `kill_every` s; return the counts."""
    import miopenkernels.find  # noqa: F401
    import numpy  # noqa: F401  (imported once here: forked writers start at once)

    _handle().close()
    ctx = mp.get_context("fork")
    rng = random.Random(seed)
    finds = ctx.Value("i", 0)
    # The run's end, set once every writer has started (a busy runner may take seconds to
    # fork 32): the kills then get their whole window. CLOCK_MONOTONIC is system-wide.
    stop_at = ctx.Value("d", float("inf"))
    procs: list[Any] = []
    kills = 0
    started = 0
    failed: list[Any] = []

    def start() -> None:
        nonlocal started
        proc = ctx.Process(target=_writer, args=(root, rng.randrange(1 << 30), stop_at, finds))
        proc.start()
        procs.append(proc)
        started += 1

    for _ in range(writers):
        start()
    stop_at.value = time.monotonic() + seconds
    while time.monotonic() < stop_at.value - kill_every:
        time.sleep(kill_every * (0.5 + rng.random()))
        alive = [p for p in procs if p.is_alive()]
        for proc in rng.sample(alive, min(len(alive), max(1, writers // 4))):
            with contextlib.suppress(ProcessLookupError):  # it may have just failed
                os.kill(proc.pid, signal.SIGKILL)
            proc.join()
            if proc.exitcode not in (-signal.SIGKILL, 0):  # 0: it ran to the end first
                failed.append(proc.exitcode)
            procs.remove(proc)
            kills += 1
            start()
    for proc in procs:
        proc.join(timeout=seconds + 120)
    failed += [p.exitcode for p in procs if p.exitcode != 0]
    return {"writers": writers, "seconds": seconds, "started": started, "killed": kills,
            "finds": finds.value, "failed_writers": failed, **check(root)}


def check(root: Path) -> dict[str, Any]:
    """Counts of what the databases hold after the run, after one more write."""
    import numpy as np
    from miopenkernels.db import FindDbFile
    from miopenkernels.find import find

    os.environ.update(_env(root))
    h = _handle()
    user = Path(os.environ["MIOPEN_USER_DB_PATH"])
    cache = Path(os.environ["MIOPEN_CUSTOM_CACHE_DIR"])
    finddb = FindDbFile.read(h.paths.user_finddb)
    incomplete = [key for key, rec in finddb.records.items()
                  if {s.solver for s in rec.solutions} != set(SOLVERS)]
    integrity = {}
    for path in (h.paths.user_perfdb, h.paths.user_kdb):
        conn = sqlite3.connect(path)
        integrity[path.name] = conn.execute("PRAGMA integrity_check").fetchone()[0]
        conn.close()
    # One more write of each database removes what killed writers left.
    p = _problem(PROBLEMS + 1)
    h.perfdb.store(p, "Tun", "1")
    find(h, p, np.zeros(p.in_shape, np.float32), np.zeros(p.wei_shape, np.float32),
         np.zeros(p.out_shape, np.float32), mode="NORMAL")
    h.close()
    leftovers = sorted(f.name for d in (user, cache) for f in d.iterdir()
                       if f.name.endswith(".tmp"))
    return {"records": len(finddb.records), "incomplete_records": incomplete,
            "integrity": integrity, "tmp_left": leftovers}


if __name__ == "__main__":
    import tempfile

    sys.path.insert(0, str(Path(__file__).parent))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writers", type=int, default=32)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--kill-every", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=int(time.time()))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        result = run(Path(tmp), writers=args.writers, seconds=args.seconds,
                     kill_every=args.kill_every, seed=args.seed)
    print(json.dumps({"seed": args.seed, **result}, indent=1))
