"""Hostile databases stay bounded: each case ends in seconds and a few hundred MiB with one
`error:` line and its exit code (CLI) or the library's own error, and nothing is written where
it must not be. The files are built small: a bzip2 bomb of a few KiB, a view over a recursive
query, a FindDb with one line far over the maximum line length.

The CLI runs in a child process (bounded_run.py); its wall time and peak RSS (VmHWM) are what
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
from pathlib import Path

import pytest
from bounded_run import TIME_LIMIT_S
from bounded_run import run_cli_bounded as _cli_bounded
from miopenkernels.db.kerneldb import KDB_SCHEMA_SQL, KernelDb
from miopenkernels.db.perfdb import SCHEMA_SQL, PerfDb, PerfDbFile
from miopenkernels.errors import DamagedDbError, DbError, IntegrityError, MIOpenKernelsError
from testdata import MIOPEN

# An endless query: what a view named as one of MIOpen's tables may hide behind its columns.
_ENDLESS = ("WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r) "
            "SELECT i FROM r WHERE i < 0")


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


def test_the_runtimes_first_find_over_a_view_is_a_typed_error(monkeypatch, tmp_path,
                                                              caplog) -> None:
    import numpy as np
    from find_doubles import PROBLEM, SM90, FakeCompiler, FakeSolver, db_env
    from miopenkernels.backends import NullBackend
    from miopenkernels.find import find
    from miopenkernels.handle import Handle

    dirs = db_env(monkeypatch, tmp_path)
    for kind in ("kdb", "db"):
        base = SM90.basename
        for old in dirs["system"].iterdir():
            old.unlink()
        (_kdb_with_view if kind == "kdb" else _perfdb_with_view)(dirs["system"] / f"{base}.{kind}")
        h = Handle(backend=NullBackend(SM90), compiler=FakeCompiler(),
                   solvers=[FakeSolver("Fast", 1.0)])
        p = PROBLEM
        tensors = (np.ones(p.in_shape, np.float32), np.ones(p.wei_shape, np.float32),
                   np.zeros(p.out_shape, np.float32))
        caplog.clear()
        start = time.monotonic()
        if kind == "kdb":  # every kernel comes from the kdb: no solver runs, and find says so
            with pytest.raises(MIOpenKernelsError) as caught:
                find(h, PROBLEM, *tensors, mode="NORMAL")
            assert "view" in str(caught.value) + caplog.text
        else:  # the doubles are not tunable: find runs, a PerfDb read is a typed error
            find(h, PROBLEM, *tensors, mode="NORMAL")
            with pytest.raises(DamagedDbError, match="view"):
                h.perfdb.load(PROBLEM)
        assert time.monotonic() - start < TIME_LIMIT_S
        h.close()


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


# ---------------------------------------------------------------------------- long lines
_SAMPLE = [ln for ln in (MIOPEN / "fdb_gfx90a6e_HIP_sample.txt").read_text().splitlines()
           if "=" in ln and not ln.startswith("#")]
_KEY = _SAMPLE[0].split("=", 1)[0]


def _finddb_with_a_long_line(path: Path, line_mib: int = 64) -> None:
    """AMD's sample FindDb with one line of `line_mib` MiB in the middle, on the key of its
    first record (a lookup of that key meets both lines)."""
    entry = b"S:1.0,0,miopenConvolutionFwdAlgoDirect;"
    with path.open("wb") as fh:
        fh.write("\n".join(_SAMPLE[:20]).encode() + b"\n")
        fh.write(_KEY.encode() + b"=" + entry * ((line_mib << 20) // len(entry)) + b"\n")
        fh.write("\n".join(_SAMPLE[20:]).encode() + b"\n")


def test_a_finddb_line_over_the_maximum_is_skipped_without_being_held(tmp_path: Path) -> None:
    fdb = tmp_path / "gfx90a6e.HIP.fdb.txt"
    _finddb_with_a_long_line(fdb)
    env = {"MIOPEN_USER_DB_PATH": str(tmp_path / "user")}
    out = _cli_bounded(["db", "lookup", str(fdb), _KEY, "--json"], 0, env)
    assert '"found": true' in out
    out = _cli_bounded(["db", "inspect", str(fdb), "--json"], 0, env)
    assert f'"records": {len(_SAMPLE)}' in out and "longer than 1 MiB" in out
    _cli_bounded(["db", "merge", str(fdb), "--out", str(tmp_path / "merged")], 0, env)
    merged = (tmp_path / "merged" / fdb.name).read_text().splitlines()
    assert len(merged) == len(_SAMPLE)
    _cli_bounded(["db", "convert", str(fdb), str(tmp_path / "c.fdb.txt")], 0, env)
    # The runtime's reader: the first lookup searches the file, the index skips the line.
    from miopenkernels.db.finddb import FindDb

    db = FindDb(fdb, tmp_path / "user" / "u.ufdb.txt")
    try:
        assert db.lookup(_KEY) is not None
        assert db.system is not None
        assert len(db.system) == len(_SAMPLE) and db.system.skipped.count == 1
        assert len(db.keys(1 << 30) or []) == len(_SAMPLE)
    finally:
        db.close()


def test_a_user_finddb_line_over_the_maximum_is_skipped(tmp_path: Path) -> None:
    from miopenkernels.db.finddb import FindDb, FindDbFile

    user = tmp_path / "u.ufdb.txt"
    _finddb_with_a_long_line(user, line_mib=4)
    read = FindDbFile.read(user)
    assert len(read) == len(_SAMPLE) and read.skipped.count == 1
    assert "longer than 1 MiB" in read.skipped.first[0]
    assert FindDb(None, user).lookup(_KEY) is not None


def test_a_text_perfdb_line_over_the_maximum_is_skipped(tmp_path: Path) -> None:
    shard = Path(__file__).resolve().parents[1] / "fixtures" / "shards" / "rehearsal.db.txt"
    text = shard.read_text()
    db = tmp_path / "gfx90a6e.db.txt"
    db.write_text(text + "1x" * (1 << 20) + "=S:1\n")
    read = PerfDbFile.read(db)
    assert len(read) == len(PerfDbFile.read(shard)) and read.skipped.count == 1


# ---------------------------------------------------------------------------- lossless merge
def _shard(path: Path, first: int) -> None:
    path.write_text("".join(f"{first + i}-8-8-3x3-16-8-8-1-1x1-1x1-1x1-0-NCHW-FP32-F="
                            "ConvDirectNaiveConvFwd:1.5,0,miopenConvolutionFwdAlgoDirect\n"
                            for i in range(50)))


def test_concurrent_merges_into_one_folder_keep_every_record(tmp_path: Path) -> None:
    out = tmp_path / "D"
    shards = []
    for n in range(8):
        (tmp_path / f"s{n}").mkdir()
        shards.append(tmp_path / f"s{n}" / "gfx90a6e.HIP.fdb.txt")
        _shard(shards[-1], 1000 * (n + 1))
    code = "from miopenkernels.cli import main; main()"
    procs = [subprocess.Popen([sys.executable, "-c", code, "db", "merge", str(s), "--out",
                               str(out)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
             for s in shards]
    outputs = [p.communicate(timeout=120)[0].decode() for p in procs]
    assert [p.returncode for p in procs] == [0] * 8, outputs
    lines = (out / "gfx90a6e.HIP.fdb.txt").read_text().splitlines()
    assert len(lines) == 400 and len({ln.split("=")[0] for ln in lines}) == 400


# ---------------------------------------------------------------------------- kdb list
def test_kdb_list_of_many_rows_streams(tmp_path: Path) -> None:
    kdb = tmp_path / "gfx906_60.kdb"
    blob = b"\x7fELF" + bytes(60)
    digest = hashlib.md5(blob).hexdigest()
    conn = sqlite3.connect(kdb)
    for s in KDB_SCHEMA_SQL.split(";"):
        if s.strip():
            conn.execute(s)
    rows = 60_000
    conn.executemany("INSERT INTO kern_db (kernel_name, kernel_args, kernel_blob, kernel_hash, "
                     "uncompressed_size) VALUES (?, ?, ?, ?, 0)",
                     ((f"naive_conv_{i % 97}.cpp.o", f"-DTILE={i} -mcpu=gfx906", blob, digest)
                      for i in range(rows)))
    conn.commit()
    conn.close()
    out = _cli_bounded(["kdb", "list", str(kdb)], 0)
    lines = out.splitlines()
    assert lines[0] == f"{kdb.name}: {rows} entries" and len(lines) == rows + 3
    assert lines[3].startswith("naive_conv_0.cpp.o") and "-DTILE=0 -mcpu=gfx906" in lines[3]
    import json

    listed = json.loads(_cli_bounded(["kdb", "list", str(kdb), "--json"], 0))
    assert len(listed) == rows and listed[0]["kernel_hash"] == digest


# ---------------------------------------------------------------------------- links
def _foreign_sqlite(path: Path) -> None:
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE notes (body TEXT)")
    conn.execute("INSERT INTO notes VALUES ('another program')")
    conn.commit()
    conn.close()


@pytest.mark.parametrize("target", ["foreign", "device"])
def test_a_user_kdb_linked_out_of_the_cache_is_never_written_through(
        monkeypatch, tmp_path: Path, target: str) -> None:
    from find_doubles import PROBLEM, SM90, FakeCompiler, FakeSolver, db_env
    from miopenkernels.backends import NullBackend
    from miopenkernels.handle import Handle

    db_env(monkeypatch, tmp_path)
    h = Handle(backend=NullBackend(SM90), compiler=FakeCompiler(),
               solvers=[FakeSolver("Fast", 1.0)])
    foreign = tmp_path / "elsewhere" / "app.sqlite"
    foreign.parent.mkdir()
    _foreign_sqlite(foreign)
    before = _sha(foreign)
    link_to = foreign if target == "foreign" else Path("/dev/zero")
    journal_existed = Path(f"{link_to}-journal").exists()
    h.paths.user_kdb.parent.mkdir(parents=True, exist_ok=True)
    h.paths.user_kdb.symlink_to(link_to)
    solver = h.solvers[0]
    job = solver.compile_job(PROBLEM, solver.default_params(PROBLEM, SM90), SM90)
    with pytest.warns(UserWarning, match="symbolic link"):
        h.kernel(job)
    h.close()
    assert _sha(foreign) == before
    assert sorted(os.listdir(foreign.parent)) == ["app.sqlite"]
    assert Path(f"{link_to}-journal").exists() == journal_existed
    # Healed inside the cache folder: the link set aside, a regular cache in its place.
    assert not h.paths.user_kdb.is_symlink()
    with KernelDb(h.paths.user_kdb) as db:
        assert db.contains(job.kdb_name, job.kdb_args)


def test_a_user_perfdb_that_is_a_folder_or_a_link_out_is_set_aside(tmp_path: Path) -> None:
    cfg = ("NCHW", "FP32", "F", 2, 4, 8, 8, 1, 3, 3, 1, 8, 1, 1, 1, 0, 1, 1, 0, 1, 1, 0, 0, 1)
    user = tmp_path / "user" / "gfx90a6e_1.1.0.udb"
    (user / "inside").mkdir(parents=True)
    db = PerfDb(None, user)
    with pytest.warns(UserWarning, match="set aside"):
        db.store(cfg, "ConvAsm1x1U", "1,2,3")
    assert db.load(cfg) == {"ConvAsm1x1U": "1,2,3"}
    foreign = tmp_path / "app.sqlite"
    _foreign_sqlite(foreign)
    before = _sha(foreign)
    user2 = tmp_path / "user" / "gfx906_60_1.1.0.udb"
    user2.symlink_to(foreign)
    db2 = PerfDb(None, user2)
    with pytest.warns(UserWarning):
        assert db2.load(cfg) == {}
        db2.store(cfg, "ConvAsm1x1U", "4,5,6")
    assert db2.load(cfg) == {"ConvAsm1x1U": "4,5,6"}
    assert _sha(foreign) == before and not user2.is_symlink()


def test_a_user_finddb_linked_to_a_device_is_replaced_not_read(tmp_path: Path) -> None:
    from miopenkernels.db.finddb import FindDb, FindDbFile

    user = tmp_path / "user" / "u.ufdb.txt"
    user.parent.mkdir()
    user.symlink_to("/dev/zero")
    record = FindDbFile.parse(_SAMPLE[1]).records.popitem()[1]
    start = time.monotonic()
    with pytest.warns(UserWarning, match="set aside"):
        FindDb(None, user).store(record.key, record.solutions)
    assert time.monotonic() - start < TIME_LIMIT_S
    assert not user.is_symlink() and FindDb(None, user).lookup(record.key) is not None


# ---------------------------------------------------------------------------- environment
def test_home_in_miopen_paths_is_expanded(monkeypatch, tmp_path: Path) -> None:
    from miopenkernels import config

    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("MIOPEN_USER_DB_PATH", "~/udb")
    monkeypatch.setenv("MIOPEN_CUSTOM_CACHE_DIR", "~")
    assert config.user_db_dir() == tmp_path / "udb"
    assert config.kernel_cache_dir() == tmp_path


@pytest.mark.parametrize("variable", ["MIOPEN_SYSTEM_DB_PATH", "MIOPEN_USER_DB_PATH",
                                      "MIOPEN_CUSTOM_CACHE_DIR"])
def test_a_miopen_path_over_the_system_limit_is_a_db_error(monkeypatch, tmp_path: Path,
                                                           variable: str) -> None:
    from find_doubles import SM90, db_env
    from miopenkernels.backends import NullBackend
    from miopenkernels.handle import Handle

    db_env(monkeypatch, tmp_path)
    monkeypatch.setenv(variable, str(tmp_path / ("a" * 5000)))
    with pytest.raises(DbError, match=f"{variable}=.*over the system's limit"):
        Handle(backend=NullBackend(SM90))
    monkeypatch.setenv(variable, str(tmp_path / ("b" * 300)))
    with pytest.raises(DbError, match="a name in it is over"):
        Handle(backend=NullBackend(SM90))




@pytest.mark.parametrize("variable", ["MIOPEN_USER_DB_PATH", "MIOPEN_CUSTOM_CACHE_DIR"])
@pytest.mark.parametrize("link", ["loop", "dangling", "loop/sub"])
def test_a_user_folder_that_is_a_link_leading_nowhere_means_none(monkeypatch, tmp_path: Path,
                                                                 variable: str,
                                                                 link: str) -> None:
    """A loop of links or a dangling link as the user or cache folder: one warning and no
    such folder, where the first lookup raised OSError (too many levels of symbolic links)."""
    from find_doubles import PROBLEM, SM90, db_env
    from miopenkernels.backends import NullBackend
    from miopenkernels.handle import Handle

    db_env(monkeypatch, tmp_path)
    (tmp_path / "loop").symlink_to(tmp_path / "loop2")
    (tmp_path / "loop2").symlink_to(tmp_path / "loop")
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    monkeypatch.setenv(variable, str(tmp_path / link))
    with pytest.warns(UserWarning, match="symbolic link that leads nowhere"):
        handle = Handle(backend=NullBackend(SM90))
    assert handle.solutions(PROBLEM)
    assert not (tmp_path / "nowhere").exists()


# ---------------------------------------------------------------------------- not files
@pytest.mark.parametrize("kind", ["fifo", "device", "folder"])
def test_a_database_that_is_not_a_regular_file_is_refused_at_once(tmp_path: Path,
                                                                  kind: str) -> None:
    path = tmp_path / "gfx906_60.HIP.fdb.txt"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "device":
        path.symlink_to("/dev/zero")
    else:
        path.mkdir()
    for args in (["db", "inspect", str(path)], ["db", "lookup", str(path), _KEY],
                 ["kdb", "list", str(path)]):
        out = _cli_bounded(args, 5)
        assert "not a regular file" in out, out
