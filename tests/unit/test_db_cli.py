"""`miopenkernels db` on the real samples: inspect, convert, lookup, merge; sniffing."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from miopen_dumps import TESTDATA, build_sqlite, sections
from miopenkernels.cli import app
from miopenkernels.db import FindDbFile, KernelDb, PerfDbFile, sniff, target_from_name
from typer.testing import CliRunner

runner = CliRunner()
FDB_V2 = TESTDATA / "fdb_gfx942130_HIP_sample.txt"
FDB_V1 = TESTDATA / "ufdb_user_gfx1030_40_HIP_2_18_0_mvermeulen.txt"
PDB = TESTDATA / "perfdb_legacy_text_gfx803_36_cd_pdb_2019.txt"


def _run(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, ["db", *args])
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize(("name", "target"), [
    ("gfx90a6e.HIP.fdb.txt", ("gfx90a", 110)),
    ("fdb_gfx942130_HIP_sample.txt", ("gfx942", 304)),
    ("gfx906_60.kdb", ("gfx906", 60)),
    ("udb_user_gfx1030_40_1.1.0_mvermeulen.txt", ("gfx1030", 40)),
    ("gfx90878.db", ("gfx908", 120)),
    ("gfx1100_48.HIP.3_4_0_.ufdb.txt", ("gfx1100", 48)),
    ("miopen_1.0.0.udb", None),
])
def test_target_from_file_name(name: str, target: tuple[str, int] | None) -> None:
    found = target_from_name(name)
    assert (found.arch, found.cu) == target if target else found is None  # type: ignore[union-attr]


def test_sniff_says_what_each_file_is(tmp_path: Path) -> None:
    assert (sniff(FDB_V2).kind, sniff(FDB_V2).version) == ("finddb", "2.0")
    assert (sniff(FDB_V1).kind, sniff(FDB_V1).version) == ("finddb", "1.0")
    assert sniff(PDB).kind == "perfdb-legacy-text"
    udb = build_sqlite(sections("udb_user_gfx1030_40_1.1.0_mvermeulen.txt")[0],
                       tmp_path / "gfx1030_40_1.1.0.udb")
    assert (sniff(udb).kind, sniff(udb).version) == ("perfdb-sqlite", "1.1.0")
    old = build_sqlite(sections("udb_user_sqlite_old_schemas_mvermeulen.txt")[0],
                       tmp_path / "miopen_1.0.0.udb")
    assert sniff(old).version == "1.0.0"
    text = PerfDbFile.read(udb).write(tmp_path / "gfx1030_40.db.txt")
    assert sniff(text).kind == "perfdb-text"
    with KernelDb(tmp_path / "gfx1030_40.ukdb", readonly=False) as db:
        db.store("a.o", "-mcpu=gfx1030", b"x" * 1000)
    assert sniff(tmp_path / "gfx1030_40.ukdb").kind == "ukdb"
    assert sniff(TESTDATA / "driver_cmds_mituna_utils_recurrent_cfgs_vgg16.txt").kind == "unknown"


def test_inspect_finddb_json() -> None:
    code, out, _ = _run("inspect", str(FDB_V2), "--json")
    assert code == 0
    report = json.loads(out)
    assert report["kind"] == "finddb" and report["version"] == "2.0"
    assert report["target"]["basename"] == "gfx942130" and report["target"]["cu"] == 304
    assert report["counts"]["records"] == 40 and report["integrity"]["ok"]


def test_inspect_sqlite_perfdb_and_kdb(tmp_path: Path) -> None:
    udb = build_sqlite(sections("udb_user_gfx1030_40_1.1.0_mvermeulen.txt")[0],
                       tmp_path / "gfx1030_40_1.1.0.udb")
    code, out, _ = _run("inspect", str(udb), "--json")
    report = json.loads(out)
    assert code == 0 and report["counts"]["tables"] == {"config": 17, "perf_db": 40}
    assert report["integrity"]["checked"].startswith("PRAGMA integrity_check")
    kdb = tmp_path / "gfx906_60.kdb"
    with KernelDb(kdb, readonly=False) as db:
        db.store("a.o", "-mcpu=gfx906", b"\x7fELF" * 500)
    code, out, _ = _run("inspect", str(kdb))
    assert code == 0 and "integrity: ok" in out and "gfx906_60" in out


def test_inspect_kdb_with_bad_blob_exits_12(tmp_path: Path) -> None:
    import sqlite3

    kdb = tmp_path / "gfx906_60.kdb"
    with KernelDb(kdb, readonly=False) as db:
        db.store("a.o", "-mcpu=gfx906", b"\x7fELF" * 500)
    conn = sqlite3.connect(kdb)
    conn.execute("UPDATE kern_db SET kernel_hash = 'ffff'")
    conn.commit()
    conn.close()
    code, out, err = _run("inspect", str(kdb), "--json")
    assert code == 12 and json.loads(out)["integrity"]["ok"] is False
    assert err.startswith("error: ") and "a.o" in err


@pytest.mark.parametrize(("content", "needle"), [
    (b"version https://git-lfs.github.com/spec/v1\noid sha256:00\nsize 9\n", "git lfs pull"),
    (b"SQLite format 3\x00" + b"\x00" * 50, "under 512 bytes"),
])
def test_bad_files_exit_5_with_one_line(tmp_path: Path, content: bytes, needle: str) -> None:
    path = tmp_path / "gfx906_60.kdb"
    path.write_bytes(content)
    code, out, err = _run("inspect", str(path))
    assert code == 5 and needle in err and err.count("\n") == 1 and "Traceback" not in err
    code, _, err = _run("inspect", str(tmp_path / "missing.kdb"))
    assert code == 5 and "no such" in err


def test_convert_perfdb_both_ways_and_finddb_v1(tmp_path: Path) -> None:
    udb = build_sqlite(sections("udb_user_gfx1030_40_1.1.0_mvermeulen.txt")[0],
                       tmp_path / "gfx1030_40_1.1.0.udb")
    text = tmp_path / "gfx1030_40.db.txt"
    back = tmp_path / "gfx1030_40.db"
    assert _run("convert", str(udb), str(text))[0] == 0
    assert _run("convert", str(text), str(back))[0] == 0
    assert PerfDbFile.read(back).records == PerfDbFile.read(udb).records
    code, out, _ = _run("convert", str(PDB), str(tmp_path / "gfx803_36.db"), "--json")
    assert code == 0 and json.loads(out)["configs"] == 25
    fdb = tmp_path / "gfx1030_40.HIP.fdb.txt"
    assert _run("convert", str(FDB_V1), str(fdb))[0] == 0
    assert FindDbFile.read(fdb).version == "2.0" and len(FindDbFile.read(fdb)) == 15


def test_lookup_driver_line_and_key() -> None:
    line = "./bin/MIOpenDriver convfp16 -n 16 -c 512 -H 13 -W 13 -k 1000 -y 1 -x 1 -F 6"
    code, out, _ = _run("lookup", str(FDB_V2), line, "--json")
    results = json.loads(out)["results"]
    assert code == 0 and [r["key"][-1] for r in results] == ["B", "W"]
    assert results[0]["solutions"][0]["solver"] == "ConvAsmImplicitGemmGTCDynamicBwdXdlopsNHWC"
    code, out, _ = _run("lookup", str(PDB), "16-55-55-3x3-64-55-55-2-1x1-1x1-1x1-0-NCHW-FP16-B")
    assert code == 0 and "16,16,16,16,1,1,2,4,2" in out
    code, out, _ = _run("lookup", str(FDB_V2), "1-1-1-1x1-1-1-1-1-0x0-1x1-1x1-0-NCHW-FP32-F")
    assert code == 1 and "no record" in out
    code, _, err = _run("lookup", str(FDB_V2), "conv -n -1")
    assert code == 3 and err.startswith("error: ")


def _shards(tmp_path: Path) -> list[Path]:
    algo = "miopenConvolutionFwdAlgoDirect"
    key = "64-56-56-1x1-64-56-56-64-0x0-1x1-1x1-0-NCHW-FP32-F"
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    (a / "gfx1030_40.HIP.fdb.txt").write_text(f"{key}=S1:2.5,0,{algo};S2:1.0,0,{algo}\n")
    (b / "gfx1030_40.HIP.fdb.txt").write_text(f"{key}=S1:0.5,8,{algo};S3:3,0,{algo}\n")
    shutil.copy(FDB_V1, b / "gfx1030_40.HIP.2_18_0_.ufdb.txt")
    pkey = "2x64x56x56x1x1x1x1x64x64x0x0x0x1x1x0x1x1x0x0x1xNCHWxFP32xF"
    (a / "gfx1030_40.db.txt").write_text(f"{pkey}=X:1;Y:1\n")
    (b / "gfx1030_40.db.txt").write_text(f"{pkey}=X:2\n")
    (a / "gfx1030_40_z.db.txt").write_text(f"{pkey}=Y:3\n")
    return [a / "gfx1030_40.HIP.fdb.txt", b / "gfx1030_40.HIP.fdb.txt",
            b / "gfx1030_40.HIP.2_18_0_.ufdb.txt", a / "gfx1030_40.db.txt",
            b / "gfx1030_40.db.txt", a / "gfx1030_40_z.db.txt"]


def test_merge_is_deterministic_and_keeps_fastest(tmp_path: Path) -> None:
    shards = _shards(tmp_path)
    code, out, _ = _run("merge", *map(str, shards), "--out", str(tmp_path / "o1"), "--json")
    assert code == 0 and json.loads(out)["basename"] == "gfx1030_40"
    assert _run("merge", *map(str, reversed(shards)), "--out", str(tmp_path / "o2"))[0] == 0
    for name in ("gfx1030_40.HIP.fdb.txt", "gfx1030_40.db.txt"):
        assert (tmp_path / "o1" / name).read_bytes() == (tmp_path / "o2" / name).read_bytes()
    merged = FindDbFile.read(tmp_path / "o1" / "gfx1030_40.HIP.fdb.txt")
    record = merged.get("64-56-56-1x1-64-56-56-64-0x0-1x1-1x1-0-NCHW-FP32-F")
    assert record is not None
    solvers = [(s.solver, s.time) for s in record.solutions]
    assert solvers[:3] == [("ConvHipImplicitGemmV4R4Fwd", 0.108561), ("GemmFwd1x1_0_1", 0.406324),
                           ("S1", 0.5)]
    assert ("S2", 1.0) in solvers and ("S3", 3.0) in solvers and len(merged) == 15
    perf = (tmp_path / "o1" / "gfx1030_40.db.txt").read_text()
    # Shards by file name: a/..db.txt, b/..db.txt, then ..._z.db.txt: the last wins per solver.
    assert perf.endswith("=X:2;Y:3\n")


def test_merge_without_a_target_name_asks_for_basename(tmp_path: Path) -> None:
    shard = tmp_path / "shard.txt"
    shard.write_text(FDB_V2.read_text())
    code, _, err = _run("merge", str(shard), "--out", str(tmp_path / "o"))
    assert code == 5 and "--basename" in err
    code, _, _ = _run("merge", str(shard), "--out", str(tmp_path / "o"), "--basename",
                      "gfx942130")
    assert code == 0 and (tmp_path / "o" / "gfx942130.HIP.fdb.txt").exists()


def test_readme_merge_run_twice_into_dbs_loses_no_record(tmp_path: Path) -> None:
    # README: miopenkernels db merge shards/*.db.txt shards/*.fdb.txt --out dbs/sm9084
    repo = Path(__file__).resolve().parents[2]
    dbs = tmp_path / "dbs" / "sm9084"
    shutil.copytree(repo / "dbs" / "sm9084", dbs)
    before_find = FindDbFile.read(dbs / "sm9084.HIP.fdb.txt")
    before_perf = PerfDbFile.read(dbs / "sm9084.db.txt")
    shards = tmp_path / "shards"
    shards.mkdir()
    fixtures = repo / "tests" / "fixtures" / "shards"
    shutil.copy(fixtures / "rehearsal.HIP.fdb.txt", shards / "sm9084.HIP.fdb.txt")
    shutil.copy(fixtures / "rehearsal.db.txt", shards / "sm9084.db.txt")
    args = ["merge", str(shards / "sm9084.db.txt"), str(shards / "sm9084.HIP.fdb.txt"),
            "--out", str(dbs), "--json"]
    code, out, err = _run(*args)
    assert code == 0, err
    assert all(o["merged_with_existing"] for o in json.loads(out)["outputs"])
    first = {p.name: p.read_bytes() for p in dbs.iterdir()}
    assert _run(*args)[0] == 0
    assert {p.name: p.read_bytes() for p in dbs.iterdir()} == first
    after_find = FindDbFile.read(dbs / "sm9084.HIP.fdb.txt")
    after_perf = PerfDbFile.read(dbs / "sm9084.db.txt")
    assert len(before_find) > 500 and set(after_find.records) == set(before_find.records)
    for key, record in before_find.records.items():
        assert {s.solver for s in record.solutions} <= \
            {s.solver for s in after_find.records[key].solutions}
    assert set(after_perf.records) == set(before_perf.records)
    # --replace overwrites instead: only the shards' records are left.
    assert _run(*args[:-1], "--replace")[0] == 0
    assert len(FindDbFile.read(dbs / "sm9084.HIP.fdb.txt")) == len(
        FindDbFile.read(shards / "sm9084.HIP.fdb.txt"))


@pytest.mark.parametrize(("umask", "mode"), [(0o022, 0o644), (0o027, 0o640)])
def test_created_files_follow_the_umask(tmp_path: Path, umask: int, mode: int) -> None:
    import os

    udb = build_sqlite(sections("udb_user_gfx1030_40_1.1.0_mvermeulen.txt")[0],
                       tmp_path / "gfx1030_40_1.1.0.udb")
    old = os.umask(umask)
    try:
        assert _run("convert", str(udb), str(tmp_path / "o" / "gfx1030_40.db.txt"))[0] == 0
        assert _run("convert", str(udb), str(tmp_path / "o" / "gfx1030_40.db"))[0] == 0
        assert _run("convert", str(FDB_V1), str(tmp_path / "o" / "gfx1030_40.HIP.fdb.txt"))[0] == 0
        shard = tmp_path / "o" / "gfx1030_40.HIP.fdb.txt"
        assert _run("merge", str(shard), "--out", str(tmp_path / "m"))[0] == 0
    finally:
        os.umask(old)
    for path in [*(tmp_path / "o").iterdir(), *(tmp_path / "m").iterdir()]:
        assert path.stat().st_mode & 0o777 == mode, path


def test_convert_skips_and_counts_lines_it_cannot_carry(tmp_path: Path) -> None:
    good = "2x64x56x56x1x1x1x1x64x64x0x0x0x1x1x0x1x1x0x0x1xNCHWxFP32xF=ConvAsm1x1U:1,2"
    huge = "2x64x56x56x1x1x1x1x64x64x0x0x0x1x1x0x1x1x0x0x1xNCHWxFP32xF".replace(
        "2x64x", f"2x{1 << 63}x", 1) + "=ConvAsm1x1U:1"
    src = tmp_path / "gfx906_60.db.txt"
    src.write_text(f"{good}\nnot a line\n{huge}\n")
    code, out, err = _run("convert", str(src), str(tmp_path / "gfx906_60.db"), "--json")
    assert code == 0, err
    report = json.loads(out)
    assert report["configs"] == 1 and report["skipped_lines"] == 2
    assert "64-bit" in report["skipped"][1]
    back = tmp_path / "back.db.txt"
    assert _run("convert", str(tmp_path / "gfx906_60.db"), str(back))[0] == 0
    assert back.read_text() == good + "\n"
