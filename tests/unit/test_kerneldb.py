"""KernelDb: MIOpen's kern_db table, bzip2 blobs, md5 on every read, bad files rejected."""

from __future__ import annotations

import base64
import hashlib
import os
import sqlite3
from pathlib import Path

import pytest
from miopen_dumps import TESTDATA
from miopenkernels.db.kerneldb import KernelDb, pack_blob
from miopenkernels.db.perfdb import PerfDbFile
from miopenkernels.errors import DbError, IntegrityError

NAME = "naive_conv.cpp.o"
ARGS = "-DMIOPEN_USE_FP32=1 -mcpu=gfx90a"
CODE = b"\x7fELF" + b"\x00" * 4000 + bytes(range(256)) * 8  # compresses well
RANDOM = os.urandom(3000)  # does not compress


def _fin_entries() -> list[list[str]]:
    lines = (TESTDATA / "kdb_kernel_entries_from_fin_tests.txt").read_text().splitlines()[1:]
    return [[f.strip() for f in ln.split(" | ")] for ln in lines if ln.strip()]


def test_store_and_load_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "gfx90a6e.ukdb"
    with KernelDb(path, readonly=False) as db:
        db.store(NAME, ARGS, CODE)
        db.store("raw.o", ARGS, RANDOM)
        assert db.load(NAME, ARGS) == CODE
        assert db.load("raw.o", ARGS) == RANDOM
        assert db.load(NAME, "-mcpu=gfx942") is None
    with KernelDb(path) as db:
        assert db.load(NAME, ARGS) == CODE


def test_rows_follow_miopens_format(tmp_path: Path) -> None:
    path = tmp_path / "gfx90a6e.kdb"
    with KernelDb(path, readonly=False) as db:
        db.store_many([(NAME, ARGS, CODE), ("raw.o", ARGS, RANDOM)])
    conn = sqlite3.connect(path)
    assert [r[0] for r in conn.execute(
        "SELECT name FROM sqlite_master WHERE type='table'")] == ["kern_db"]
    index = conn.execute("PRAGMA index_list(kern_db)").fetchall()
    assert [(r[1], r[2]) for r in index] == [("idx_kern_db", 1)]
    assert [r[2] for r in conn.execute("PRAGMA index_info(idx_kern_db)")] == \
        ["kernel_name", "kernel_args"]
    rows = dict((r[0], r[1:]) for r in conn.execute(
        "SELECT kernel_name, kernel_blob, kernel_hash, uncompressed_size FROM kern_db"))
    blob, digest, size = rows[NAME]
    # A raw bzip2 stream at level 9, as MIFin's blobs ('QlpoOTFBWSZTW' = 'BZh91AY&SY').
    assert blob.startswith(b"BZh9") and size == len(CODE)
    assert digest == hashlib.md5(CODE).hexdigest()
    fin_prefix = base64.b64decode(_fin_entries()[0][3])
    assert fin_prefix[:10] == blob[:10]
    raw, raw_digest, raw_size = rows["raw.o"]
    assert raw == RANDOM and raw_size == 0 and raw_digest == hashlib.md5(RANDOM).hexdigest()
    assert conn.execute("PRAGMA journal_mode").fetchone() == ("delete",)


def test_fin_entries_give_kdb_names_and_args(tmp_path: Path) -> None:
    # kernel_name = kernel_file + '.o'; kernel_args = comp_options + ' -mcpu=<arch>'.
    entries = _fin_entries()
    assert len(entries) == 35
    rows = [(f"{e[0]}.o", f"{e[4]} -mcpu=gfx908", e[2].encode()) for e in entries]
    with KernelDb(tmp_path / "gfx90878.kdb", readonly=False) as db:
        assert db.store_many(rows) == len({(r[0], r[1]) for r in rows})
        names = {e.kernel_name for e in db.entries()}
    assert "conv1x1u_stride2.s.o" in names
    for e in entries:
        assert len(e[2]) == 32 and e[2] == e[2].lower()  # md5 hex as MIOpen writes it


def test_entries_report_sizes_without_unpacking(tmp_path: Path) -> None:
    path = tmp_path / "gfx906_60.kdb"
    with KernelDb(path, readonly=False) as db:
        db.store_many([(NAME, ARGS, CODE), ("raw.o", ARGS, RANDOM)])
        entries = db.entries()
    assert [e.kernel_name for e in entries] == [NAME, "raw.o"]
    assert entries[0].compressed and entries[0].size == len(CODE)
    assert entries[0].stored_size < len(CODE)
    assert not entries[1].compressed and entries[1].size == len(RANDOM)


def test_hash_mismatch_names_the_entry(tmp_path: Path) -> None:
    path = tmp_path / "gfx906_60.kdb"
    with KernelDb(path, readonly=False) as db:
        db.store(NAME, ARGS, CODE)
    conn = sqlite3.connect(path)
    conn.execute("UPDATE kern_db SET kernel_hash = ?", ("0" * 32,))
    conn.commit()
    conn.close()
    with KernelDb(path) as db, pytest.raises(IntegrityError, match=NAME) as err:
        db.load(NAME, ARGS)
    assert ARGS in str(err.value) and str(path) in str(err.value)
    with KernelDb(path) as db:
        assert len(list(db.verify())) == 1


def test_corrupt_bzip2_stream_is_an_integrity_error(tmp_path: Path) -> None:
    path = tmp_path / "gfx906_60.kdb"
    stored, size, digest = pack_blob(CODE)
    with KernelDb(path, readonly=False) as db:
        db.store(NAME, ARGS, CODE)
    conn = sqlite3.connect(path)
    conn.execute("UPDATE kern_db SET kernel_blob = ?", (stored[:-20] + b"x" * 20,))
    conn.commit()
    conn.close()
    with KernelDb(path) as db, pytest.raises(IntegrityError, match="bzip2"):
        db.load(NAME, ARGS)


def test_store_many_is_deterministic(tmp_path: Path) -> None:
    rows = [(f"k{i}.o", f"-DI={i} -mcpu=gfx942", CODE + bytes([i])) for i in range(20)]
    with KernelDb(tmp_path / "a.kdb", readonly=False) as db:
        db.store_many(rows)
    with KernelDb(tmp_path / "b.kdb", readonly=False) as db:
        db.store_many(reversed(rows))
    assert (tmp_path / "a.kdb").read_bytes() == (tmp_path / "b.kdb").read_bytes()


def test_readonly_open_creates_nothing_and_refuses_writes(tmp_path: Path) -> None:
    with pytest.raises(DbError, match="no such KernelDb"):
        KernelDb(tmp_path / "absent.kdb")
    assert not (tmp_path / "absent.kdb").exists()
    path = tmp_path / "gfx906_60.kdb"
    with KernelDb(path, readonly=False) as db:
        db.store(NAME, ARGS, CODE)
    with KernelDb(path) as db, pytest.raises(DbError, match="read-only"):
        db.store("x.o", ARGS, CODE)


def test_user_cache_uses_wal(tmp_path: Path) -> None:
    path = tmp_path / "gfx906_60.ukdb"
    with KernelDb(path, readonly=False) as db:
        db.store(NAME, ARGS, CODE)
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)


def _one_line(err: pytest.ExceptionInfo[DbError], path: Path) -> str:
    message = str(err.value)
    assert str(path) in message and "\n" not in message
    return message


def test_bad_files_are_rejected_with_one_line(tmp_path: Path) -> None:
    lfs = tmp_path / "gfx90a6e.kdb"
    lfs.write_text("version https://git-lfs.github.com/spec/v1\n"
                   "oid sha256:4d7a2146\nsize 123456789\n")
    with pytest.raises(DbError) as err:
        KernelDb(lfs)
    assert "git lfs pull" in _one_line(err, lfs)

    small = tmp_path / "small.kdb"
    small.write_bytes(b"SQLite format 3\x00" + b"\x00" * 100)
    with pytest.raises(DbError) as err:
        KernelDb(small)
    assert "under 512 bytes" in _one_line(err, small)

    junk = tmp_path / "junk.kdb"
    junk.write_bytes(os.urandom(4096))
    with pytest.raises(DbError) as err:
        KernelDb(junk)
    assert "not a SQLite database" in _one_line(err, junk)


def test_perf_db_given_as_kdb_is_rejected(tmp_path: Path) -> None:
    perf = PerfDbFile()
    perf.records[("NCHW", "FP32", "F", 2, 3, 8, 8, 1, 3, 3, 1, 4, 1, 0, 0, 0, 1, 1, 0, 1, 1,
                  0, 0, 1)] = {"ConvAsm1x1U": "1"}
    path = perf.write(tmp_path / "gfx906_60.kdb")
    with pytest.raises(DbError) as err:
        KernelDb(path)
    assert "is a PerfDb" in _one_line(err, path)


def test_truncated_sqlite_is_rejected(tmp_path: Path) -> None:
    path = tmp_path / "gfx906_60.kdb"
    with KernelDb(path, readonly=False) as db:
        db.store_many([(f"k{i}.o", ARGS, os.urandom(2000)) for i in range(30)])
    data = path.read_bytes()
    cut = tmp_path / "cut.kdb"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(DbError) as err, KernelDb(cut) as db:
        list(db.verify())
    assert "truncated" in _one_line(err, cut)


def test_corrupt_pages_are_reported_not_raised_raw(tmp_path: Path) -> None:
    path = tmp_path / "gfx906_60.kdb"
    with KernelDb(path, readonly=False) as db:
        db.store_many([(f"k{i}.o", ARGS, os.urandom(2000)) for i in range(30)])
    data = bytearray(path.read_bytes())
    data[4096:8192] = os.urandom(4096)  # scramble the second page (the table's root)
    path.write_bytes(bytes(data))
    with pytest.raises((DbError, IntegrityError)) as err, KernelDb(path) as db:
        db.entries()
        list(db.verify())
    assert str(path) in str(err.value)
