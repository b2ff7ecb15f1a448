"""Many processes writing one user db at once, and a writer killed mid-series."""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import sqlite3
import time
from pathlib import Path
from typing import Any

from miopenkernels.db import FindDb, FindDbFile, KernelDb, PerfDb, PerfDbFile, Solution
from miopenkernels.problem import ConvProblem

ALGO = "miopenConvolutionFwdAlgoDirect"
BASE = "gfx906_60"


def _files(d: Path) -> dict[str, Path]:
    return {
        "finddb": d / f"{BASE}.HIP.3_4_0_.ufdb.txt",
        "perfdb": d / f"{BASE}_1.1.0.udb",
        "perfdb_text": d / f"{BASE}.HIP.3_4_0_.udb.txt",
        "kdb": d / f"{BASE}.ukdb",
    }


def _problem(writer: int, j: int) -> ConvProblem:
    return ConvProblem(n=1 + writer, c=1 + j, k=8, in_spatial=(8, 8), filter=(1, 1))


def _blob(writer: int, j: int) -> bytes:
    return f"code object {writer} {j} ".encode() * 40


def _write(d: Path, writer: int, count: int, start: Any = None, done: Any = None) -> None:
    files = _files(d)
    fdb = FindDb(None, files["finddb"])
    pdb = PerfDb(None, files["perfdb"])
    tdb = PerfDb(None, files["perfdb_text"])
    if start is not None:
        start.wait()
    with KernelDb(files["kdb"], readonly=False) as kdb:
        for j in range(count):
            p = _problem(writer, j)
            fdb.store(p, [Solution(f"S{writer}", 1.0 + j, 0, ALGO)])
            pdb.store(p, f"Solver{writer}", f"{j},{writer}")
            tdb.store(p, f"Solver{writer}", f"{j},{writer}")
            kdb.store(f"k{writer}_{j}.o", "-mcpu=gfx906", _blob(writer, j))
            if done is not None:
                done.value = j + 1


def _check(d: Path, writers: int, counts: list[int]) -> None:
    files = _files(d)
    fdb = FindDbFile.read(files["finddb"])
    pdb = PerfDbFile.read(files["perfdb"])
    tdb = PerfDbFile.read(files["perfdb_text"])
    with KernelDb(files["kdb"]) as kdb:
        assert list(kdb.verify()) == []
        for w in range(writers):
            for j in range(counts[w]):
                p = _problem(w, j)
                record = fdb.get(p)
                assert record is not None and record.best.solver == f"S{w}"
                assert pdb.load(p) == {f"Solver{w}": f"{j},{w}"}
                assert tdb.load(p) == {f"Solver{w}": f"{j},{w}"}
                assert kdb.load(f"k{w}_{j}.o", "-mcpu=gfx906") == _blob(w, j)
    for name in ("perfdb", "kdb"):
        conn = sqlite3.connect(files[name])
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        conn.close()


def test_sixteen_processes_write_distinct_records(tmp_path: Path) -> None:
    ctx = mp.get_context("spawn")
    start = ctx.Event()
    writers, count = 16, 3
    procs = [ctx.Process(target=_write, args=(tmp_path, w, count, start)) for w in range(writers)]
    for proc in procs:
        proc.start()
    start.set()
    for proc in procs:
        proc.join(timeout=120)
    assert [proc.exitcode for proc in procs] == [0] * writers
    _check(tmp_path, writers, [count] * writers)
    fdb = FindDbFile.read(_files(tmp_path)["finddb"])
    assert len(fdb) == writers * count


def test_killed_writer_leaves_every_completed_record(tmp_path: Path) -> None:
    ctx = mp.get_context("spawn")
    done = ctx.Value("i", 0)
    proc = ctx.Process(target=_write, args=(tmp_path, 0, 100_000, None, done))
    proc.start()
    deadline = time.monotonic() + 60
    while done.value < 15 and time.monotonic() < deadline:
        time.sleep(0.005)
    os.kill(proc.pid, signal.SIGKILL)  # type: ignore[arg-type]
    proc.join()
    completed = done.value
    assert proc.exitcode == -signal.SIGKILL and completed >= 15
    _check(tmp_path, 1, [completed])
    # The file is still writable by the next process after the kill.
    _write(tmp_path, 1, 1)
    _check(tmp_path, 2, [completed, 1])
