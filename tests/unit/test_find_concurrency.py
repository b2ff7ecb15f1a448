"""32 processes find and tune into one set of user databases while some are killed."""

from __future__ import annotations

import os
from pathlib import Path

from concurrent_find import run


def test_killed_concurrent_finds_store_only_complete_records(tmp_path: Path) -> None:
    # Bounded for a 2-core CI runner; `python tests/unit/concurrent_find.py` runs a longer one.
    seconds = float(os.environ.get("MIOPENKERNELS_STRESS_SECONDS", "8"))
    result = run(tmp_path, writers=32, seconds=seconds, kill_every=1.0, seed=15)
    assert result["killed"] >= 8 and result["finds"] > 0
    assert result["failed_writers"] == []
    assert result["records"] > 0 and result["incomplete_records"] == []
    assert set(result["integrity"].values()) == {"ok"}
    assert result["tmp_left"] == []


def _tensors(p):  # noqa: ANN001, ANN202
    import numpy as np

    return (np.zeros(p.in_shape, np.float32), np.zeros(p.wei_shape, np.float32),
            np.zeros(p.out_shape, np.float32))


def _tuning_handle(monkeypatch, tmp_path, fail_reads: int):  # noqa: ANN001, ANN202
    from find_doubles import SM90, FakeCompiler, FakeSolver, db_env
    from miopenkernels.backends import NullBackend
    from miopenkernels.errors import DbError
    from miopenkernels.handle import Handle

    db_env(monkeypatch, tmp_path)
    backend = NullBackend(SM90)
    backend.kernel_ms = {"tun_p1": 1.0, "plain_p0": 2.0}
    h = Handle(backend=backend, compiler=FakeCompiler(),
               solvers=[FakeSolver("Tun", 1.0, tunable=True, space=(1, 2)),
                        FakeSolver("Plain", 2.0)])
    load = h.perfdb.load
    left = [fail_reads]

    def flaky(problem):  # noqa: ANN001, ANN202
        if left[0] > 0:
            left[0] -= 1
            raise DbError(f"{h.paths.user_perfdb}: database is locked")
        return load(problem)

    monkeypatch.setattr(h.perfdb, "load", flaky)
    return h


def test_find_retries_a_solver_whose_perfdb_read_failed(monkeypatch, tmp_path) -> None:  # noqa: ANN001
    from find_doubles import PROBLEM
    from miopenkernels.db import FindDbFile
    from miopenkernels.find import find

    h = _tuning_handle(monkeypatch, tmp_path, fail_reads=2)
    sols = find(h, PROBLEM, *_tensors(PROBLEM), mode="NORMAL")
    assert {s.solver for s in sols} == {"Tun", "Plain"}
    record = FindDbFile.read(h.paths.user_finddb).get(PROBLEM)
    assert record is not None and {s.solver for s in record.solutions} == {"Tun", "Plain"}


def test_find_records_nothing_when_a_solver_keeps_failing(monkeypatch, tmp_path) -> None:  # noqa: ANN001
    from find_doubles import PROBLEM
    from miopenkernels.find import find

    h = _tuning_handle(monkeypatch, tmp_path, fail_reads=100)
    sols = find(h, PROBLEM, *_tensors(PROBLEM), mode="NORMAL")
    assert [s.solver for s in sols] == ["Plain"]  # the caller still gets what was measured
    assert not h.paths.user_finddb.exists()


def test_a_reader_waits_for_a_writer_holding_the_database(tmp_path) -> None:  # noqa: ANN001
    import sqlite3
    import threading
    import time

    from find_doubles import PROBLEM
    from miopenkernels.db import PerfDb

    path = tmp_path / "gfx906_60_1.1.0.udb"
    PerfDb(None, path).store(PROBLEM, "Tun", "1")
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("PRAGMA journal_mode=DELETE")  # readers block on a rollback-journal writer
    holder.execute("BEGIN EXCLUSIVE")
    timer = threading.Timer(0.3, lambda: holder.execute("COMMIT"))
    timer.start()
    t0 = time.monotonic()
    assert PerfDb(None, path).load(PROBLEM) == {"Tun": "1"}
    assert time.monotonic() - t0 >= 0.2  # it waited rather than failing
    timer.join()
    holder.close()


def test_a_new_sqlite_db_appears_with_its_schema(tmp_path) -> None:  # noqa: ANN001
    import sqlite3

    from miopenkernels.db._lock import create_sqlite

    path = tmp_path / "x.udb"
    create_sqlite(path, ["CREATE TABLE t (a INT)"], wal=True)
    create_sqlite(path, ["CREATE TABLE u (a INT)"], wal=True)  # exists: left alone
    conn = sqlite3.connect(path)
    assert [r[0] for r in conn.execute("SELECT name FROM sqlite_master")] == ["t"]
    conn.close()
    assert [f.name for f in tmp_path.iterdir() if f.name.endswith(".tmp")] == []


def test_orphaned_temporary_files_go_on_the_next_write(tmp_path) -> None:  # noqa: ANN001
    from find_doubles import PROBLEM
    from miopenkernels.db import FindDb, Solution

    path = tmp_path / "gfx906_60.HIP.3_4_0_.ufdb.txt"
    # What a writer killed between mkstemp and rename leaves (pid 2**22+1 is never alive).
    orphan = tmp_path / f".{path.name}.{2**22 + 1}.abcd.tmp"
    orphan.write_text("half")
    FindDb(None, path).store(PROBLEM, [Solution("S", 1.0, 0, "miopenConvolutionFwdAlgoDirect")])
    assert not orphan.exists() and path.exists()
