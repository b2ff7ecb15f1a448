"""AMD's full databases (testdata/miopen/*.bz2) through every reader: lookups through the kept
index, lossless conversion, every key and solver name MIOpen wrote."""

from __future__ import annotations

import json
import random
import sqlite3
from pathlib import Path

import pytest
from miopenkernels.cli import app
from miopenkernels.db import FindDb, FindDbFile, PerfDbFile
from miopenkernels.db.finddb import FindDbReader
from miopenkernels.db.perfdb import PerfDb, SqlitePerfDb, text_key
from testdata import FULL_FINDDB, FULL_PERFDB, decompress_full
from typer.testing import CliRunner


@pytest.fixture(scope="session")
def full(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("full-dbs")
    return {"finddb": decompress_full(FULL_FINDDB, folder),
            "perfdb": decompress_full(FULL_PERFDB, folder)}


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines()


def test_finddb_lookups_through_the_kept_index_answer_every_key(
        full: dict[str, Path], tmp_path: Path) -> None:
    lines = _lines(full["finddb"])
    assert len(lines) == 193_590
    rng = random.Random(12)
    sample = rng.sample(lines, 300)
    # Keys ConvProblem cannot rebuild (outputs clamped to 1) are MIOpen's too.
    sample.append(next(ln for ln in lines if ln.startswith(
        "1-1-1-4x4-512-1-1-128-0x0-1x1-1x1-0-NCHW-FP32-B=")))
    sample.append(next(ln for ln in lines if "ConvWinograd3x3MultipassWrW<3-2>" in ln))
    first = FindDb(full["finddb"], tmp_path / "user" / "gfx90a68.HIP.3_4_0_.ufdb.txt")
    assert first.system is not None and first.system._index.built
    for line in sample:
        record = first.lookup(line.split("=", 1)[0])
        assert record is not None and record.to_line() == line
    assert first.lookup("1-1-1-1x1-1-1-1-1-0x0-1x1-1x1-0-NCHW-FP32-F") is None
    kept = list((tmp_path / "user" / "index").iterdir())
    assert len(kept) == 1 and kept[0].name.startswith(FULL_FINDDB)
    # A later process opens the kept index instead of reading the file.
    later = FindDbReader(full["finddb"], tmp_path / "user" / "index")
    assert not later._index.built and later.get(sample[0].split("=")[0]) is not None
    # A changed file is never answered from a stale index.
    changed = tmp_path / FULL_FINDDB
    changed.write_text("\n".join(lines[:10]) + "\n")
    assert FindDbReader(changed, tmp_path / "user" / "index").get(
        lines[20].split("=")[0]) is None


def test_finddb_reads_whole_and_writes_back_byte_identically(full: dict[str, Path],
                                                             tmp_path: Path) -> None:
    db = FindDbFile.read(full["finddb"])
    assert len(db) == 193_590 and db.skipped.count == 0 and db.version == "2.0"
    out = db.write(tmp_path / FULL_FINDDB)
    assert out.read_bytes() == full["finddb"].read_bytes()


def test_perfdb_sqlite_text_sqlite_keeps_every_config_and_id(full: dict[str, Path],
                                                             tmp_path: Path) -> None:
    original = PerfDbFile.read(full["perfdb"])
    assert len(original) == 99_522 and original.entry_count == 148_096
    text = original.write(tmp_path / "gfx906_60.db.txt")
    back = PerfDbFile.read(text)
    assert back.skipped.count == 0 and back.records == original.records
    again = back.write(tmp_path / "gfx906_60.db")
    conn = sqlite3.connect(f"file:{full['perfdb']}?mode=ro", uri=True)
    ids = conn.execute("SELECT id, layout, in_channels, in_h FROM config ORDER BY id").fetchall()
    conn.close()
    conn = sqlite3.connect(again)
    assert conn.execute("SELECT id, layout, in_channels, in_h FROM config ORDER BY id"
                        ).fetchall() == ids
    conn.close()
    # text -> SQLite -> text is byte-identical.
    assert PerfDbFile.read(again).write(tmp_path / "again.db.txt").read_bytes() == \
        text.read_bytes()
    # A lookup in the foreign file goes through an index of its own, kept beside the user dbs.
    index = tmp_path / "user" / "index"
    with SqlitePerfDb(full["perfdb"], index_dir=index) as db:
        for cfg in random.Random(5).sample(list(original.records), 200):
            assert db.load(cfg) == original.records[cfg]
    assert [p.suffix for p in index.iterdir()] == [".db"]
    system = PerfDb(again, tmp_path / "user" / "gfx906_60_1.1.0.udb")
    cfg = next(iter(original.records))
    assert system.load(cfg) == original.records[cfg]
    assert text_key(cfg) in text.read_text()


def test_db_lookup_and_inspect_on_the_full_finddb(full: dict[str, Path], tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MIOPEN_USER_DB_PATH", str(tmp_path / "user"))
    runner = CliRunner()
    key = "1-1-1-4x4-512-1-1-128-0x0-1x1-1x1-0-NCHW-FP32-B"
    result = runner.invoke(app, ["db", "lookup", str(full["finddb"]), key, "--json"])
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["results"][0]["found"] and report["results"][0]["solutions"]
    # inspect counts per solver, and names the solvers this runtime does not implement.
    part = tmp_path / "gfx90a68.HIP.fdb.txt"
    part.write_text("\n".join(_lines(full["finddb"])[:20_000]) + "\n")
    result = runner.invoke(app, ["db", "inspect", str(part), "--json"])
    assert result.exit_code == 0, result.stderr
    counts = json.loads(result.stdout)["counts"]
    assert counts["records"] == 20_000
    assert counts["per_solver"]["ConvWinograd3x3MultipassWrW<3-2>"] > 0
    assert "ConvWinograd3x3MultipassWrW<3-2>" in json.loads(result.stdout)[
        "solvers_not_in_this_runtime"]
    assert counts["records_this_runtime_serves"] == 0  # AMD's file names MIOpen's solvers
    assert sum(counts["per_solver"].values()) == counts["solutions"]


def test_finddb_lookups_give_the_records_of_a_straight_parse(full: dict[str, Path],
                                                             tmp_path: Path) -> None:
    """The full file read whole (the one parser, as `db convert` reads it) against the reader:
    its first lookup (a search of the map) and every later one (the index), for a sample."""
    whole = FindDbFile.read(full["finddb"])
    keys = random.Random(7).sample(list(whole.records), 1000)
    keys += [k for k in ("1-1-1-4x4-512-1-1-128-0x0-1x1-1x1-0-NCHW-FP32-B",) if k in whole.records]
    keys.append(next(iter(whole.records)))  # the first line: no newline before it
    keys.append(next(reversed(whole.records)))
    reader = FindDbReader(full["finddb"], tmp_path / "index")
    try:
        assert reader._index.built and not reader._index._ready
        first = reader.get(keys[0])
        assert reader._index._builder is not None  # answered before the index was there
        assert first == whole.records[keys[0]] and first.to_line() == \
            whole.records[keys[0]].to_line()
        for key in keys:
            record = reader.get(key)
            assert record is not None and record == whole.records[key], key
            assert record.written == whole.records[key].written, key
        assert reader._index._ready and reader.get("1-1-1-1x1-1-1-1-1-0x0-1x1-1x1-0-NCHW-FP32-F") \
            is None
        # The search that answers a first lookup finds what the index finds.
        for key in keys[:100]:
            assert reader._index._scan(key.encode()) == \
                [off for off, _ in reader._index.lines(key)], key
    finally:
        reader.close()
