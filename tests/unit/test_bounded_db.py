"""Hostile databases stay bounded: each case ends in seconds and a few hundred MiB with one
`error:` line and its exit code (CLI) or the library's own error, and nothing is written where
it must not be. The files are built small: a bzip2 bomb of a few KiB, a view over a recursive
query, a FindDb with one line far over the maximum line length.

The CLI runs in a child process; its wall time and peak RSS (`wait4`'s `ru_maxrss`) are what
the bounds are checked against.
"""

from __future__ import annotations

import bz2
import hashlib
import os
import sqlite3
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pytest
from miopenkernels.db.kerneldb import KDB_SCHEMA_SQL, KernelDb
from miopenkernels.db.perfdb import SCHEMA_SQL, PerfDb, PerfDbFile
from miopenkernels.errors import DamagedDbError, DbError, IntegrityError
from testdata import MIOPEN

TIME_LIMIT_S = 5.0
RSS_LIMIT_MB = 512
# An endless query: what a view named as one of MIOpen's tables may hide behind its columns.
_ENDLESS = ("WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r) "
            "SELECT i FROM r WHERE i < 0")


def _cli(args: list[str], env: dict[str, str] | None = None) -> tuple[int, str, float, float]:
    """(exit code, stdout + stderr, seconds, peak RSS in MiB) of `miopenkernels ARGS`."""
    full_env = {**os.environ, "COLUMNS": "200", **(env or {})}
    start = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-c", "from miopenkernels.cli import main; main()",
                             *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            env=full_env)
    try:
        out, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    seconds = time.monotonic() - start
    return proc.returncode, out.decode(errors="replace"), seconds, _last_child_rss_mb()


def _last_child_rss_mb() -> float:
    import resource

    # The largest peak of every child waited for so far: a bound from above of this one's.
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024


def _cli_bounded(args: list[str], code: int, env: dict[str, str] | None = None) -> str:
    rc, out, seconds, rss = _cli(args, env)
    assert rc == code, out
    assert "Traceback" not in out, out
    if code:
        assert "error:" in out, out
    assert seconds < TIME_LIMIT_S, f"{args}: {seconds:.1f} s"
    assert rss < RSS_LIMIT_MB, f"{args}: {rss:.0f} MiB"
    return out


def _kdb_with_view(path: Path) -> None:
    conn = sqlite3.connect(path)
    conn.execute(f"CREATE VIEW kern_db (id, kernel_name, kernel_args, kernel_blob, kernel_hash, "
                 f"uncompressed_size) AS SELECT i, 'k', 'a', x'00', 'h', 0 FROM ({_ENDLESS})")
    conn.commit()
    conn.close()


def _perfdb_with_view(path: Path) -> None:
    conn = sqlite3.connect(path)
    statements = [s for s in SCHEMA_SQL.split(";") if s.strip() and "perf_db" not in s]
    for s in statements:
        conn.execute(s)
    conn.execute(f"CREATE VIEW perf_db (id, solver, config, params) AS "
                 f"SELECT i, 's', i, 'p' FROM ({_ENDLESS})")
    conn.commit()
    conn.close()


def _bomb_kdb(path: Path, inflated: int = 64 << 20, declared: int | None = None) -> None:
    """A kdb of one row whose bzip2 blob (a few KiB) inflates to `inflated` bytes of zeros."""
    comp = bz2.BZ2Compressor(9)
    chunk = bytes(1 << 20)
    stored = b"".join(comp.compress(chunk) for _ in range(inflated >> 20)) + comp.flush()
    conn = sqlite3.connect(path)
    for s in KDB_SCHEMA_SQL.split(";"):
        if s.strip():
            conn.execute(s)
    conn.execute("INSERT INTO kern_db (kernel_name, kernel_args, kernel_blob, kernel_hash, "
                 "uncompressed_size) VALUES (?, ?, ?, ?, ?)",
                 ("bomb.o", "-mcpu=gfx906", stored, "0" * 32,
                  declared if declared is not None else 4096))
    conn.commit()
    conn.close()


# ---------------------------------------------------------------------------- views
def test_a_kdb_whose_kern_db_is_a_view_is_refused_at_once(tmp_path: Path) -> None:
    kdb = tmp_path / "gfx906_60.kdb"
    _kdb_with_view(kdb)
    assert kdb.stat().st_size < 16 << 10
    for args in (["kdb", "list", str(kdb)], ["kdb", "verify", str(kdb)],
                 ["db", "inspect", str(kdb)], ["db", "lookup", str(kdb), "k*"]):
        out = _cli_bounded(args, 5)
        assert "view" in out, out
    with pytest.raises(DamagedDbError, match="view"):
        KernelDb(kdb)


def test_a_perfdb_whose_perf_db_is_a_view_is_refused_at_once(tmp_path: Path) -> None:
    db = tmp_path / "gfx906_60.db"
    _perfdb_with_view(db)
    key = "conv -n 1 -c 4 -H 8 -W 8 -k 8 -y 3 -x 3 -p 1 -q 1"
    for args in (["db", "inspect", str(db)], ["db", "lookup", str(db), key],
                 ["db", "convert", str(db), str(tmp_path / "out.db.txt")]):
        out = _cli_bounded(args, 5)
        assert "view" in out, out
    assert not (tmp_path / "out.db.txt").exists()
    start = time.monotonic()
    with pytest.raises(DamagedDbError, match="view"):
        PerfDb(db, None).load(("NCHW", "FP32", "F", *([1] * 21)))
    assert time.monotonic() - start < TIME_LIMIT_S


def test_a_query_past_its_budget_is_interrupted(tmp_path: Path) -> None:
    """The statement budget stops what the table check does not foresee."""
    from miopenkernels.db._files import sqlite_errors
    from miopenkernels.db._lock import connect

    db = tmp_path / "small.db"
    sqlite3.connect(db).execute("CREATE TABLE t (x)").connection.commit()
    conn = connect(db, readonly=True, immutable=True)
    start = time.monotonic()
    with pytest.raises(DamagedDbError, match="budget"), sqlite_errors(db, "PerfDb"):
        conn.execute(_ENDLESS).fetchall()
    assert time.monotonic() - start < TIME_LIMIT_S
    # The budget is per statement: the next one runs.
    assert conn.execute("SELECT count(*) FROM t").fetchone() == (0,)


# ---------------------------------------------------------------------------- bzip2 bombs
def test_a_bzip2_bomb_in_a_kdb_row_is_a_corrupt_row(tmp_path: Path) -> None:
    kdb = tmp_path / "gfx906_60.kdb"
    _bomb_kdb(kdb)
    assert kdb.stat().st_size < 64 << 10
    out = _cli_bounded(["kdb", "verify", str(kdb)], 12)
    assert "inflates past the 4096 bytes" in out
    out = _cli_bounded(["db", "inspect", str(kdb)], 12)
    assert "inflates past" in out
    with KernelDb(kdb) as db, pytest.raises(IntegrityError, match="inflates past"):
        db.load("bomb.o", "-mcpu=gfx906")


def test_a_row_declaring_a_size_past_the_object_maximum_is_not_inflated(tmp_path: Path) -> None:
    kdb = tmp_path / "gfx906_60.kdb"
    _bomb_kdb(kdb, inflated=1 << 20, declared=3 << 30)
    with KernelDb(kdb) as db, pytest.raises(IntegrityError, match="not a code object size"):
        db.load("bomb.o", "-mcpu=gfx906")


def test_the_runtime_recompiles_a_bomb_in_the_user_cache(monkeypatch, tmp_path: Path) -> None:
    from find_doubles import PROBLEM, SM90, FakeCompiler, FakeSolver, db_env
    from miopenkernels.backends import NullBackend
    from miopenkernels.handle import Handle

    db_env(monkeypatch, tmp_path)
    be = NullBackend(SM90)
    h = Handle(backend=be, compiler=FakeCompiler(), solvers=[FakeSolver("Fast", 1.0)])
    solver = h.solvers[0]
    job = solver.compile_job(PROBLEM, solver.default_params(PROBLEM, SM90), SM90)
    ukdb = h.paths.user_kdb
    ukdb.parent.mkdir(parents=True, exist_ok=True)
    comp = bz2.BZ2Compressor(9)
    stored = b"".join(comp.compress(bytes(1 << 20)) for _ in range(64)) + comp.flush()
    with KernelDb(ukdb, readonly=False) as db:
        db.store(job.kdb_name, job.kdb_args, b"x" * 100)
        db._conn.execute("UPDATE kern_db SET kernel_blob = ?, uncompressed_size = 100",
                         (stored,))
    start = time.monotonic()
    with pytest.warns(UserWarning, match="inflates past"):
        h.kernel(job)
    assert time.monotonic() - start < TIME_LIMIT_S
    assert h.stats.jit == 1


# ---------------------------------------------------------------------------- read-only system
def test_a_system_kdb_with_a_stray_wal_is_read_without_writing_beside_it(tmp_path: Path) -> None:
    sysdir = tmp_path / "sys"
    sysdir.mkdir()
    kdb = sysdir / "gfx906_60.kdb"
    with KernelDb(kdb, readonly=False, wal=False) as db:
        db.store("k.o", "-mcpu=gfx906", b"\x7fELF" + bytes(600))
    Path(f"{kdb}-wal").write_bytes(b"\x00" * 4096)  # a stray, meaningless -wal
    before = sorted(os.listdir(sysdir))
    with KernelDb(kdb) as db:
        assert [e.kernel_name for e in db.entries()] == ["k.o"]
    _cli_bounded(["kdb", "list", str(kdb)], 0)
    _cli_bounded(["db", "inspect", str(kdb)], 0)
    assert sorted(os.listdir(sysdir)) == before


def test_a_system_kdb_in_a_read_only_folder_reads(tmp_path: Path) -> None:
    sysdir = tmp_path / "sys"
    sysdir.mkdir()
    kdb = sysdir / "gfx906_60.kdb"
    with KernelDb(kdb, readonly=False, wal=False) as db:
        db.store("k.o", "-mcpu=gfx906", b"\x7fELF" + bytes(600))
    sysdir.chmod(0o555)
    try:
        with KernelDb(kdb) as db:
            assert db.load("k.o", "-mcpu=gfx906") == b"\x7fELF" + bytes(600)
    finally:
        sysdir.chmod(0o755)


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


_ = (warnings, DbError, PerfDbFile, MIOPEN, _sha)
