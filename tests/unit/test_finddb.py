"""FindDb text: every real sample line reads, 2.0 round-trips byte for byte, 1.0 converts."""

from __future__ import annotations

from pathlib import Path

import pytest
from miopen_dumps import TESTDATA
from miopenkernels.db.finddb import FindDb, FindDbFile, FindDbRecord, Solution, format_time
from miopenkernels.errors import DbError
from miopenkernels.problem import ConvProblem

V2_SAMPLES = ["fdb_gfx90a6e_HIP_sample.txt", "fdb_gfx942130_HIP_sample.txt"]
V1_SAMPLES = [
    "fdb_gfx803_36_OpenCL_legacy_sample.txt",
    "fdb_mituna_old_gfx90a68_HIP.txt",
    "fdb_mituna_usr_gfx90a68_HIP.txt",
    "ufdb_user_gfx1030_40_HIP_2_18_0_mvermeulen.txt",
]


def _data_lines(name: str) -> list[str]:
    return [ln for ln in (TESTDATA / name).read_text().splitlines()
            if ln.strip() and not ln.startswith("#")]


@pytest.mark.parametrize("name", V2_SAMPLES + V1_SAMPLES)
def test_every_sample_line_is_read(name: str) -> None:
    db = FindDbFile.read(TESTDATA / name)
    lines = _data_lines(name)
    assert len(db) == len(lines)
    assert db.version == ("2.0" if name in V2_SAMPLES else "1.0")
    for line in lines:
        key, _, value = line.partition("=")
        record = db.get(key)
        assert record is not None
        assert len(record.solutions) == value.count(";") + 1
        times = [s.time for s in record.solutions]
        assert times == sorted(times)


@pytest.mark.parametrize("name", V2_SAMPLES)
def test_v2_lines_round_trip_byte_identically(name: str, tmp_path: Path) -> None:
    db = FindDbFile.read(TESTDATA / name)
    out = db.write(tmp_path / "gfx90a6e.HIP.fdb.txt")
    assert out.read_text() == "".join(line + "\n" for line in _data_lines(name))


def test_v1_converts_to_v2_fastest_first() -> None:
    db = FindDbFile.read(TESTDATA / "ufdb_user_gfx1030_40_HIP_2_18_0_mvermeulen.txt")
    record = db.get("64-56-56-1x1-64-56-56-64-0x0-1x1-1x1-0-NCHW-FP32-F")
    assert record is not None
    # The v1 line lists ConvDirectNaiveConvFwd (18.4201) before faster solvers.
    assert record.to_line() == (
        "64-56-56-1x1-64-56-56-64-0x0-1x1-1x1-0-NCHW-FP32-F="
        "ConvHipImplicitGemmV4R4Fwd:0.108561,0,miopenConvolutionFwdAlgoImplicitGEMM;"
        "GemmFwd1x1_0_1:0.406324,0,miopenConvolutionFwdAlgoGEMM;"
        "ConvBinWinogradRxSf2x3g1:1.81094,0,miopenConvolutionFwdAlgoWinograd;"
        "ConvDirectNaiveConvFwd:18.4201,0,miopenConvolutionFwdAlgoDirect"
    )
    again = FindDbFile.parse(db.to_text())
    assert again.version == "2.0"
    assert again.records == db.records


def test_v1_workspace_and_solver_are_read() -> None:
    db = FindDbFile.read(TESTDATA / "fdb_mituna_old_gfx90a68_HIP.txt")
    record = db.get("1-160-698-5x5-64-79-348-1-1x1-2x2-1x1-0-NCHW-FP32-F")
    assert record is not None
    gemm = record.solution("GemmFwdRest")
    assert gemm == Solution("GemmFwdRest", 0.05712, 2749200, "miopenConvolutionFwdAlgoGEMM")
    assert record.best.solver == "ConvHipImplicitGemmForwardV4R4Xdlops_Padded_Gemm"


def test_new_times_are_written_compactly() -> None:
    assert format_time(0.0391) == "0.0391"
    assert format_time(0.12345678) == "0.123457"
    assert format_time(2732.2199) == "2732.22"
    sol = Solution("ConvBinWinograd3x3U", 0.0391, 0, "miopenConvolutionFwdAlgoWinograd")
    assert sol.to_text() == "ConvBinWinograd3x3U:0.0391,0,miopenConvolutionFwdAlgoWinograd"


def test_lookup_by_problem_and_by_key() -> None:
    db = FindDb(TESTDATA / "fdb_gfx942130_HIP_sample.txt")
    key = "1000-13-13-1x1-512-13-13-16-0x0-1x1-1x1-0-NCHW-FP16-B"
    by_key = db.lookup(key)
    by_problem = db.lookup(ConvProblem.from_key(key))
    assert by_key is not None and by_key == by_problem
    assert by_key.best.solver == "ConvAsmImplicitGemmGTCDynamicBwdXdlopsNHWC"
    assert db.lookup("1-1-1-1x1-1-1-1-1-0x0-1x1-1x1-0-NCHW-FP32-F") is None


def test_user_record_replaces_system_record_without_merge(tmp_path: Path) -> None:
    system = tmp_path / "gfx90a68.HIP.fdb.txt"
    system.write_bytes((TESTDATA / "fdb_mituna_old_gfx90a68_HIP.txt").read_bytes())
    before = system.read_bytes()
    user = tmp_path / "user" / "gfx90a68.HIP.3_4_0_.ufdb.txt"
    db = FindDb(system, user)
    key = "1-160-698-5x5-64-79-348-1-1x1-2x2-1x1-0-NCHW-FP32-F"
    assert len(db.lookup(key).solutions) == 4  # type: ignore[union-attr]
    db.store(key, [Solution("ConvMlirIgemmFwdXdlops", 0.03776, 0,
                            "miopenConvolutionFwdAlgoImplicitGEMM")])
    record = db.lookup(key)
    assert record is not None and [s.solver for s in record.solutions] == \
        ["ConvMlirIgemmFwdXdlops"]
    other = "1-19-19-1x1-64-19-19-1024-0x0-1x1-1x1-0-NCHW-FP32-B"
    assert db.lookup(other) == FindDbFile.read(system).get(other)
    assert system.read_bytes() == before
    assert user.read_text() == (
        f"{key}=ConvMlirIgemmFwdXdlops:0.03776,0,miopenConvolutionFwdAlgoImplicitGEMM\n")


def test_store_replaces_a_record_in_place(tmp_path: Path) -> None:
    user = tmp_path / "u.ufdb.txt"
    db = FindDb(None, user)
    algo = "miopenConvolutionFwdAlgoDirect"
    db.store("1-8-8-3x3-1-6-6-1-0x0-1x1-1x1-0-NCHW-FP32-F", [Solution("A", 2.0, 0, algo)])
    db.store("2-8-8-3x3-1-6-6-1-0x0-1x1-1x1-0-NCHW-FP32-F", [Solution("B", 1.0, 0, algo)])
    db.store("1-8-8-3x3-1-6-6-1-0x0-1x1-1x1-0-NCHW-FP32-F",
             [Solution("C", 3.0, 8, algo), Solution("A", 0.5, 0, algo)])
    lines = user.read_text().splitlines()
    assert lines == [
        f"1-8-8-3x3-1-6-6-1-0x0-1x1-1x1-0-NCHW-FP32-F=A:0.5,0,{algo};C:3,8,{algo}",
        f"2-8-8-3x3-1-6-6-1-0x0-1x1-1x1-0-NCHW-FP32-F=B:1,0,{algo}",
    ]


@pytest.mark.parametrize(("line", "reason"), [
    ("1-2-3", "not a '<key>=<value>' line"),
    ("k=SolverA:1.0,0", "neither"),
    ("k=SolverA:fast,0,miopenConvolutionFwdAlgoDirect", "could not convert"),
    ("k=SolverA:1.0,-5,miopenConvolutionFwdAlgoDirect", "workspace"),
    ("k=SolverA:1.0,0,notAnAlgo", "algorithm"),
])
def test_malformed_line_is_skipped_counted_and_named(tmp_path: Path, line: str,
                                                     reason: str) -> None:
    path = tmp_path / "bad.HIP.fdb.txt"
    good = "1-8-8-3x3-1-6-6-1-0x0-1x1-1x1-0-NCHW-FP32-F=A:1,0,miopenConvolutionFwdAlgoDirect"
    path.write_text(f"{line}\n{good}\n\n{line}\n")
    db = FindDbFile.read(path)
    # As MIOpen: the bad lines are skipped, never the whole file.
    assert len(db) == 1 and db.get(good.split("=")[0]) is not None
    assert db.skipped.count == 2
    assert f"{path}:1:" in db.skipped.first[0] and reason in db.skipped.first[0]
    assert f"{path}:4:" in db.skipped.first[1]
    assert "skipped" in db.skipped.summary() and "\n" not in db.skipped.summary()
    # The indexed reader (the system FindDb) skips the same lines.
    reader = FindDb(path)
    assert reader.lookup(good.split("=")[0]) is not None
    if "=" in line:
        assert reader.lookup("k") is None


def test_missing_and_lfs_pointer_files_are_rejected(tmp_path: Path) -> None:
    with pytest.raises(DbError, match="no such FindDb file"):
        FindDbFile.read(tmp_path / "nope.HIP.fdb.txt")
    pointer = tmp_path / "gfx90a6e.HIP.fdb.txt"
    pointer.write_text("version https://git-lfs.github.com/spec/v1\noid sha256:ab\nsize 60120401\n")
    with pytest.raises(DbError, match="git lfs pull"):
        FindDb(pointer).lookup("1-1-1-1x1-1-1-1-1-0x0-1x1-1x1-0-NCHW-FP32-F")


def test_record_keeps_fastest_first_order() -> None:
    algo = "miopenConvolutionFwdAlgoDirect"
    rec = FindDbRecord("k", (Solution("Slow", 5.0, 0, algo), Solution("Fast", 0.1, 0, algo)))
    assert [s.solver for s in rec.solutions] == ["Fast", "Slow"]
    assert rec.best.solver == "Fast"


def test_a_text_db_over_the_size_limit_is_refused_unread(tmp_path, monkeypatch) -> None:  # noqa: ANN001
    from miopenkernels.db import _text

    path = tmp_path / "big.HIP.fdb.txt"
    path.write_text("# padding\n" * 20)
    monkeypatch.setattr(_text, "MAX_TEXT_DB_BYTES", 100)
    with pytest.raises(DbError, match="over the 0 MiB"):
        FindDbFile.read(path)


def test_a_user_finddb_created_by_another_process_is_read_at_the_next_lookup(tmp_path) -> None:  # noqa: ANN001
    algo = "miopenConvolutionFwdAlgoDirect"
    user = tmp_path / "user" / "gfx90a68.HIP.3_4_0_.ufdb.txt"
    reader = FindDb(None, user)
    key = "1-8-8-3x3-1-6-6-1-0x0-1x1-1x1-0-NCHW-FP32-F"
    assert reader.lookup(key) is None and reader.lookup(key) is None  # missing, checked twice
    FindDb(None, user).store(key, [Solution("A", 1.0, 0, algo)])  # another writer
    record = reader.lookup(key)
    assert record is not None and record.best.solver == "A"
    user.unlink()
    assert reader.lookup(key) is None
