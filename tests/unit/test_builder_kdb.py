"""`kdb list` / `kdb verify` and the atomic kdb writer, on kdbs holding real code objects."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest
from miopenkernels.builder.build import write_kdb
from miopenkernels.cli import app
from miopenkernels.compiler import compile_job
from miopenkernels.db.kerneldb import KernelDb
from miopenkernels.solvers.base import CompileJob
from miopenkernels.target import Target
from typer.testing import CliRunner

KERNELS = Path(__file__).resolve().parents[1] / "fixtures" / "builder" / "kernels"


@pytest.fixture(scope="module")
def gfx1100_object() -> bytes:
    if not shutil.which("clang-19"):
        pytest.skip("clang-19 is not installed")
    job = CompileJob("fx_scale.hip", ("-DFX_SCALE=2.0f",), "fx_scale", Target("gfx1100", 48))
    return compile_job(job, KERNELS)


def kdb(*args: str):  # noqa: ANN201
    return CliRunner().invoke(app, ["kdb", *args])


def test_list_and_verify_a_sound_kdb(tmp_path: Path, gfx1100_object: bytes) -> None:
    path = tmp_path / "gfx1100_48.kdb"
    write_kdb(path, [("fx_scale.hip.o", "-DFX_SCALE=2.0f -mcpu=gfx1100", gfx1100_object)])
    listed = kdb("list", str(path), "--json")
    assert listed.exit_code == 0
    (entry,) = json.loads(listed.stdout)
    assert entry["kernel_name"] == "fx_scale.hip.o"
    assert entry["size"] == len(gfx1100_object)
    verify = kdb("verify", str(path), "--json")
    assert verify.exit_code == 0
    report = json.loads(verify.stdout)
    assert report["ok"] and report["checks"][0]["kernels"] == ["fx_scale"]


def test_verify_names_an_entry_whose_object_is_for_another_arch(
        tmp_path: Path, gfx1100_object: bytes) -> None:
    path = tmp_path / "gfx1100_48.kdb"
    write_kdb(path, [("fx_scale.hip.o", "-DFX_SCALE=2.0f -mcpu=gfx1100", gfx1100_object),
                     ("fx_scale.hip.o", "-DFX_SCALE=3.0f -mcpu=gfx1030", gfx1100_object)])
    verify = kdb("verify", str(path))
    assert verify.exit_code == 9
    assert "-DFX_SCALE=3.0f -mcpu=gfx1030" in verify.stderr
    assert "code object is for gfx1100, args say -mcpu=gfx1030" in verify.stderr
    assert "-DFX_SCALE=2.0f" not in verify.stderr


def test_verify_checks_the_file_basename_arch(tmp_path: Path, gfx1100_object: bytes) -> None:
    path = tmp_path / "gfx1030_40.kdb"
    write_kdb(path, [("fx_scale.hip.o", "-DFX_SCALE=2.0f -mcpu=gfx1100", gfx1100_object)])
    verify = kdb("verify", str(path))
    assert verify.exit_code == 9
    assert "gfx1030_40.kdb is a gfx1030 database" in verify.stderr


def test_verify_reports_a_hash_mismatch_with_exit_12(tmp_path: Path,
                                                     gfx1100_object: bytes) -> None:
    path = tmp_path / "gfx1100_48.kdb"
    write_kdb(path, [("fx_scale.hip.o", "-DFX_SCALE=2.0f -mcpu=gfx1100", gfx1100_object)])
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE kern_db SET kernel_hash = ?", ("0" * 32,))
    verify = kdb("verify", str(path), "--json")
    assert verify.exit_code == 12
    check = json.loads(verify.stdout)["checks"][0]
    assert check["error_kind"] == "hash" and "fx_scale.hip.o" in check["error"]


def test_failed_kdb_write_leaves_neither_file_nor_temporary(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "gfx906_60.kdb"

    def boom(self: KernelDb, rows: object) -> int:
        raise OSError("disk full")

    monkeypatch.setattr(KernelDb, "store_many", boom)
    with pytest.raises(OSError, match="disk full"):
        write_kdb(path, [("a.hip.o", "-mcpu=gfx906", b"x")])
    assert list(tmp_path.iterdir()) == []


def test_kdb_write_replaces_an_existing_file_whole(tmp_path: Path,
                                                   gfx1100_object: bytes) -> None:
    path = tmp_path / "gfx1100_48.kdb"
    write_kdb(path, [("old.hip.o", "-mcpu=gfx1100", gfx1100_object)])
    write_kdb(path, [("fx_scale.hip.o", "-mcpu=gfx1100", gfx1100_object)])
    with KernelDb(path) as db:
        assert [e.kernel_name for e in db.entries()] == ["fx_scale.hip.o"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["gfx1100_48.kdb"]
