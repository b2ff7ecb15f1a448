"""PerfDb: MIOpen's SQLite schema and text format, old schemas, user-over-system merge."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from miopen_dumps import TESTDATA, build_sqlite, sections
from miopenkernels.db.kerneldb import KernelDb
from miopenkernels.db.perfdb import (
    CONFIG_COLUMNS,
    PerfDb,
    PerfDbFile,
    SqlitePerfDb,
    config_from_text_key,
    config_key,
    text_key,
)
from miopenkernels.errors import DbError
from miopenkernels.problem import ConvProblem

SYSTEM_DUMP = "perfdb_gfx942130_sample.txt"
USER_DUMP = "udb_user_gfx1030_40_1.1.0_mvermeulen.txt"
OLD_DUMP = "udb_user_sqlite_old_schemas_mvermeulen.txt"
# resnet50 layer from the gfx1030 user db: C=64 56x56 1x1 K=64 N=64, forward.
RESNET = ConvProblem(n=64, c=64, k=64, in_spatial=(56, 56), filter=(1, 1))


@pytest.fixture()
def system_db(tmp_path: Path) -> Path:
    return build_sqlite(sections(SYSTEM_DUMP)[0], tmp_path / "gfx942130.db")


@pytest.fixture()
def user_db(tmp_path: Path) -> Path:
    return build_sqlite(sections(USER_DUMP)[0], tmp_path / "gfx1030_40_1.1.0.udb")


def _schema(path: Path) -> list[tuple[str, str]]:
    conn = sqlite3.connect(path)
    rows = conn.execute("SELECT type, name, sql FROM sqlite_master ORDER BY name").fetchall()
    conn.close()
    return [(t, " ".join(sql.replace("` ", "`").split())) for t, _, sql in rows]


def test_real_user_db_loads_per_problem(user_db: Path) -> None:
    with SqlitePerfDb(user_db) as db:
        assert db.schema == "1.1.0"
        assert db.load(RESNET) == {"ConvBinWinogradRxSf2x3": "51",
                                   "ConvCkIgemmFwdV6r1DlopsNchw": "8"}
        assert db.load(RESNET.with_direction("B")) == {}


def test_written_sqlite_has_miopens_exact_schema(user_db: Path, tmp_path: Path) -> None:
    out = PerfDbFile.read(user_db).write(tmp_path / "copy.db")
    # MIOpen's statements, plus the index that makes a lookup by config a seek, not a scan.
    assert _schema(out) == sorted([*_schema(user_db), (
        "index", "CREATE INDEX `idx_perf_db_config`ON perf_db(config)")],
        key=lambda r: r[1].split("`")[1])
    conn = sqlite3.connect(out)
    indexes = {r[1]: r[2] for r in conn.execute("PRAGMA index_list(perf_db)")}
    assert indexes["idx_perf_db"] == 1  # unique
    cols = [r[2] for r in conn.execute("PRAGMA index_info(idx_config)")]
    assert len(cols) == 24 and "id" not in cols
    assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)


def test_sqlite_text_sqlite_round_trip(system_db: Path, tmp_path: Path) -> None:
    original = PerfDbFile.read(system_db)
    text = original.write(tmp_path / "gfx942130.db.txt")
    back = PerfDbFile.read(text)
    assert back.kind == "text" and back.records == original.records
    again = back.write(tmp_path / "again.db")
    assert PerfDbFile.read(again).records == original.records
    # Same records -> same file bytes.
    assert back.write(tmp_path / "twice.db").read_bytes() == again.read_bytes()


def test_text_rendering_agrees_with_the_sqlite_rows(system_db: Path) -> None:
    derived = PerfDbFile.parse("\n".join(sections(SYSTEM_DUMP)[0].text_lines))
    rows = PerfDbFile.read(system_db)
    assert len(derived) == 30
    # The derived text covers the dump's first 30 configs; the rows sample a wider range.
    common = [cfg for cfg in rows.records if cfg in derived.records]
    assert len(common) == 9
    for cfg in common:
        for solver, params in rows.records[cfg].items():
            assert derived.records[cfg][solver] == params


def test_text_key_matches_problem_key() -> None:
    key = "2x1000x13x13x1x1x1x1x512x16x0x0x0x1x1x0x1x1x0x0x1xNCHWxFP16xB"
    cfg = config_from_text_key(key)
    assert text_key(cfg) == key
    problem = ConvProblem.from_key("1000-13-13-1x1-512-13-13-16-0x0-1x1-1x1-0-NCHW-FP16-B")
    assert problem.perfdb_text_key() == key and config_key(problem) == cfg


def test_user_entry_wins_per_solver(tmp_path: Path, user_db: Path) -> None:
    system = tmp_path / "gfx1030_40.db"
    sys_file = PerfDbFile()
    sys_file.put(RESNET, "ConvBinWinogradRxSf2x3", "99")
    sys_file.put(RESNET, "ConvOclDirectFwd", "1,2,3")
    sys_file.write(system)
    db = PerfDb(system, user_db)
    assert db.load(RESNET) == {"ConvBinWinogradRxSf2x3": "51", "ConvOclDirectFwd": "1,2,3",
                               "ConvCkIgemmFwdV6r1DlopsNchw": "8"}


@pytest.mark.parametrize("user_name", ["gfx1030_40_1.1.0.udb", "gfx1030_40.HIP.3_4_0_.udb.txt"])
def test_store_writes_the_user_db_only(tmp_path: Path, user_name: str) -> None:
    system = tmp_path / "gfx1030_40.db.txt"
    system.write_text(f"{RESNET.perfdb_text_key()}=ConvOclDirectFwd:1,2,3\n")
    before = system.read_bytes()
    db = PerfDb(system, tmp_path / "user" / user_name)
    db.store(RESNET, "ConvOclDirectFwd", "4,5,6")
    db.store(RESNET, "ConvAsm1x1U", "1,1")
    db.store(RESNET, "ConvAsm1x1U", "2,2")
    assert db.load(RESNET) == {"ConvOclDirectFwd": "4,5,6", "ConvAsm1x1U": "2,2"}
    assert system.read_bytes() == before
    assert PerfDbFile.read(tmp_path / "user" / user_name).entry_count == 2


def test_user_sqlite_db_uses_wal(tmp_path: Path) -> None:
    path = tmp_path / "gfx906_60_1.1.0.udb"
    PerfDb(None, path).store(RESNET, "ConvAsm1x1U", "1")
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)


def test_old_1_0_0_schema_is_read(tmp_path: Path) -> None:
    old = build_sqlite(sections(OLD_DUMP)[0], tmp_path / "miopen_1.0.0.udb")
    db = PerfDbFile.read(old)
    assert db.schema == "1.0.0" and len(db) == 19 and db.entry_count == 30
    assert db.load(RESNET) == {"ConvHipImplicitGemmV4R1Fwd": "16,64,4,2,4,2,2,4,4,4,4,2,16,1,4,32"}
    with pytest.raises(DbError, match="schema 1.0.0"):
        SqlitePerfDb(old, readonly=False)


def test_pre_1_0_0_schema_is_rejected_by_name(tmp_path: Path) -> None:
    older = build_sqlite(sections(OLD_DUMP)[1], tmp_path / "miopen.udb")
    with pytest.raises(DbError, match=r"pre-1\.0\.0 PerfDb schema") as err:
        PerfDbFile.read(older)
    assert str(older) in str(err.value)


def test_legacy_pdb_text_is_read_and_found_by_problem() -> None:
    db = PerfDbFile.read(TESTDATA / "perfdb_legacy_text_gfx803_36_cd_pdb_2019.txt")
    assert db.kind == "legacy-text" and len(db) == 25
    problem = ConvProblem.from_key("384-8-8-3x1-384-8-8-256-1x0-1x1-1x1-0-NCHW-FP16-W")
    entries = db.load(problem)
    assert entries["ConvOclBwdWrW2<4>"] == "1,6,3,8,3" and len(entries) == 5


def test_kernel_db_given_as_perf_db_is_rejected(tmp_path: Path) -> None:
    kdb = tmp_path / "gfx906_60.kdb"
    with KernelDb(kdb, readonly=False) as db:
        db.store("naive_conv.cpp.o", "-DX=1 -mcpu=gfx906", b"\x7fELF" * 100)
    with pytest.raises(DbError, match="is a KernelDb"):
        SqlitePerfDb(kdb)
    renamed = tmp_path / "gfx906_60.db"
    renamed.write_bytes(kdb.read_bytes())
    with pytest.raises(DbError, match="not a PerfDb"):
        PerfDb(renamed).load(RESNET)


def test_malformed_text_line_is_skipped_counted_and_named(tmp_path: Path) -> None:
    path = tmp_path / "gfx906_60.db.txt"
    path.write_text(f"{RESNET.perfdb_text_key()}=ConvAsm1x1U:1\n2x3xNCHW=ConvAsm1x1U:1\n")
    db = PerfDbFile.read(path)
    assert db.load(RESNET) == {"ConvAsm1x1U": "1"} and db.skipped.count == 1
    assert f"{path}:2: bad PerfDb line" in db.skipped.first[0]
    path.write_text(f"{RESNET.perfdb_text_key()}=ConvAsm1x1U\n")
    db = PerfDbFile.read(path)
    assert len(db) == 0 and "entry 'ConvAsm1x1U'" in db.skipped.first[0]
    # The run-time reader skips it too.
    assert PerfDb(path).load(RESNET) == {}


def test_negative_key_fields_and_configs_without_entries_survive(tmp_path: Path) -> None:
    key = "2x64x56x56x1x1x1x1x64x64x-5x0x0x1x1x0x1x1x0x0x1xNCHWxFP32xF"
    text = f"{key}=ConvAsm1x1U:1,2\n{RESNET.perfdb_text_key()}=\n"
    path = tmp_path / "gfx906_60.db.txt"
    path.write_text(text)
    db = PerfDbFile.read(path)
    assert len(db) == 2 and db.entry_count == 1 and db.skipped.count == 0
    sqlite = db.write(tmp_path / "gfx906_60.db")
    back = PerfDbFile.read(sqlite)
    assert back.records == db.records
    assert back.write(tmp_path / "again.db.txt").read_text() == text


@pytest.mark.parametrize(("cfg_change", "solver", "params", "message"), [
    ({"in_channels": 1 << 63}, "S", "1", "64-bit"),
    ({"in_channels": None}, "S", "1", "NULL"),
    ({"layout": "NCxHW"}, "S", "1", "layout"),
    ({}, "S", None, "NULL"),
    ({}, "S", b"\x01", "bytes"),
    ({}, "S", "1;2", "';'"),
    ({}, "S:T", "1", "solver"),
])
def test_values_sqlite_or_text_cannot_carry_are_refused(
        tmp_path: Path, cfg_change: dict, solver: str, params: object, message: str) -> None:
    cfg = dict(RESNET.perfdb_config(), **cfg_change)
    db = PerfDbFile()
    db.records[config_key(cfg)] = {solver: params}  # type: ignore[dict-item]
    for out in ("x.db", "x.db.txt"):
        with pytest.raises(DbError, match=message):
            db.write(tmp_path / out)
        assert not (tmp_path / out).exists()
    with pytest.raises(DbError, match=message):
        PerfDb(None, tmp_path / "u_1.1.0.udb").store(config_key(cfg), solver, params)  # type: ignore[arg-type]


def test_blob_or_null_values_in_sqlite_are_a_db_error(tmp_path: Path, user_db: Path) -> None:
    conn = sqlite3.connect(user_db)
    conn.execute("UPDATE perf_db SET params = CAST(params AS BLOB) WHERE solver = "
                 "'ConvBinWinogradRxSf2x3'")
    conn.commit()
    conn.close()
    with pytest.raises(DbError, match="params of ConvBinWinogradRxSf2x3 is bytes"):
        PerfDb(user_db).load(RESNET)
    with pytest.raises(DbError, match="bytes"):
        PerfDbFile.read(user_db)


@pytest.mark.parametrize("key", [
    "1-1-1-4x4-512-1-1-128-0x0-1x1-1x1-0-NCHW-FP32-B",  # output clamped to 1 (AMD's gfx90a68)
    "1-1-1-1-1x4x4-512-1-4-4-128-0x0x0-1x1x1-1x1x1-0-NCDHW-FP32-B",  # 3-D
    "64-56-56-3x3-64-56-56-32-1x1-1x1-1x1-0-NHWC-NHWC-NHWC-FP16-F_g2",
])
def test_every_finddb_key_gives_its_config_field_by_field(key: str) -> None:
    from miopenkernels.db.perfdb import config_from_finddb_key

    cfg = dict(zip(CONFIG_COLUMNS, config_from_finddb_key(key), strict=True))
    assert cfg["direction"] == key.rsplit("-", 1)[-1][0]
    assert cfg["in_channels"] == int(key.split("-")[0])
    try:
        assert config_from_finddb_key(key) == config_key(ConvProblem.from_key(key))
    except Exception as exc:  # noqa: BLE001 - a key ConvProblem cannot rebuild
        assert "empty" in str(exc) or "inconsistent" in str(exc)
