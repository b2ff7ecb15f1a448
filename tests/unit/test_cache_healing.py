"""A damaged user kernel cache is set aside and the kernel compiled again; an unusable user or
cache folder means no user databases or no cache, with one warning, never an OSError."""

from __future__ import annotations

import sqlite3
import warnings
from pathlib import Path

import numpy as np
import pytest
from find_doubles import PROBLEM, SM90, FakeCompiler, FakeSolver, db_env
from miopenkernels.backends import NullBackend
from miopenkernels.find import find
from miopenkernels.handle import Handle


def _handle(comp: FakeCompiler | None = None) -> Handle:
    be = NullBackend(SM90)
    be.kernel_ms = {"fast_p0": 0.5, "slow_p0": 2.0}
    return Handle(backend=be, compiler=comp or FakeCompiler(),
                  solvers=[FakeSolver("Slow", 1.0), FakeSolver("Fast", 2.0)])


def _tensors() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    p = PROBLEM
    return (np.ones(p.in_shape, np.float32), np.ones(p.wei_shape, np.float32),
            np.zeros(p.out_shape, np.float32))


def _fill_cache(env: dict[str, Path]) -> Path:
    h = _handle()
    find(h, PROBLEM, *_tensors(), mode="NORMAL")
    h.close()
    (env["user"] / h.paths.user_finddb.name).unlink()  # the next find benchmarks again
    return h.paths.user_kdb


def _damage_file(path: Path, how: str) -> None:
    data = path.read_bytes()
    if how == "garbage":
        path.write_bytes(b"\x13\x37" * 4096)
    elif how == "lfs":
        path.write_text("version https://git-lfs.github.com/spec/v1\noid sha256:00\nsize 9\n")
    elif how == "truncated":
        path.write_bytes(data[: len(data) // 2])


@pytest.mark.parametrize("how", ["garbage", "lfs", "truncated"])
def test_a_damaged_user_kernel_cache_file_is_set_aside_and_rebuilt(monkeypatch, tmp_path, how):
    env = db_env(monkeypatch, tmp_path)
    ukdb = _fill_cache(env)
    for side in ("-wal", "-shm"):
        Path(f"{ukdb}{side}").unlink(missing_ok=True)
    _damage_file(ukdb, how)
    comp = FakeCompiler()
    h = _handle(comp)
    with pytest.warns(UserWarning, match="set aside") as caught:
        sols = find(h, PROBLEM, *_tensors(), mode="NORMAL")
    assert [str(w.message) for w in caught].count(str(caught[0].message)) == 1
    assert sols[0].solver == "Fast" and len(comp.jobs) == 2  # compiled again
    aside = [p.name for p in ukdb.parent.iterdir() if ".damaged-" in p.name]
    assert len(aside) == 1
    h.close()
    with sqlite3.connect(ukdb) as conn:  # a fresh cache holding the recompiled kernels
        assert conn.execute("SELECT count(*) FROM kern_db").fetchone()[0] == 2


def test_an_entry_with_a_bad_md5_is_removed_and_compiled_again(monkeypatch, tmp_path):
    env = db_env(monkeypatch, tmp_path)
    ukdb = _fill_cache(env)
    with sqlite3.connect(ukdb) as conn:
        conn.execute("UPDATE kern_db SET kernel_hash = '00000000000000000000000000000000'")
    comp = FakeCompiler()
    h = _handle(comp)
    with pytest.warns(UserWarning, match="md5"):
        sols = find(h, PROBLEM, *_tensors(), mode="NORMAL")
    assert sols[0].solver == "Fast" and len(comp.jobs) == 2
    h.close()
    h2 = _handle(FakeCompiler())
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # healed: no warning the second time
        h2.paths.user_finddb.unlink()
        find(h2, PROBLEM, *_tensors(), mode="NORMAL")
    assert h2.stats.user_kdb == 2 and h2.stats.jit == 0


@pytest.mark.parametrize("variable", ["MIOPEN_USER_DB_PATH", "MIOPEN_CUSTOM_CACHE_DIR"])
@pytest.mark.parametrize("how", ["file", "under_a_file"])
def test_an_unusable_user_folder_means_no_cache_with_one_warning(monkeypatch, tmp_path,
                                                                 variable, how):
    db_env(monkeypatch, tmp_path)
    afile = tmp_path / "afile"
    afile.write_text("x")
    monkeypatch.setenv(variable, str(afile if how == "file" else afile / "sub"))
    with pytest.warns(UserWarning, match=variable) as caught:
        h = _handle()
        sols = find(h, PROBLEM, *_tensors(), mode="NORMAL")
        h.compile_solution(PROBLEM, sols[0])
    assert len([w for w in caught if variable in str(w.message)]) == 1
    assert sols[0].solver == "Fast" and afile.read_text() == "x"


def test_a_cache_folder_that_fails_on_write_turns_the_cache_off(monkeypatch, tmp_path):
    env = db_env(monkeypatch, tmp_path)
    h = _handle()
    env["cache"].rmdir()
    env["cache"].write_text("now a file")  # made unusable after the handle opened
    with pytest.warns(UserWarning, match="kernel cache") as caught:
        sols = find(h, PROBLEM, *_tensors(), mode="NORMAL")
    assert sols[0].solver == "Fast" and len(caught) == 1 and h.cache_disabled


@pytest.mark.parametrize("how", ["garbage", "lfs"])
def test_a_damaged_user_perfdb_is_ignored_with_one_warning(monkeypatch, tmp_path, how):
    db_env(monkeypatch, tmp_path)
    be = NullBackend(SM90)
    be.kernel_ms = {"tun_p1": 1.0, "tun_p2": 0.5, "plain_p0": 2.0}
    h = Handle(backend=be, compiler=FakeCompiler(),
               solvers=[FakeSolver("Tun", 1.0, tunable=True, space=(1, 2)),
                        FakeSolver("Plain", 2.0)])
    h.paths.user_perfdb.write_bytes(b"\x13\x37" * 4096 if how == "garbage" else
                                    b"version https://git-lfs.github.com/spec/v1\n")
    with pytest.warns(UserWarning, match="user PerfDb is ignored") as caught:
        sols = find(h, PROBLEM, *_tensors(), mode="NORMAL")
        find(h, PROBLEM, *_tensors(), mode="NORMAL", enforce="DB_UPDATE")
    assert len([w for w in caught if "PerfDb" in str(w.message)]) == 1
    # Both solvers ran (Tun on its defaults) and the record names both.
    assert {s.solver for s in sols} == {"Tun", "Plain"}
    assert "Tun:" in h.paths.user_finddb.read_text() and "Plain:" in \
        h.paths.user_finddb.read_text()


def test_a_damaged_cache_that_cannot_be_set_aside_turns_the_cache_off(monkeypatch, tmp_path):
    from miopenkernels import _fsutil

    env = db_env(monkeypatch, tmp_path)
    ukdb = _fill_cache(env)
    _damage_file(ukdb, "garbage")

    def refuse(src, dest, **kw):  # noqa: ANN001, ANN003, ANN202
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(_fsutil, "replace", refuse)
    comp = FakeCompiler()
    h = _handle(comp)
    with pytest.warns(UserWarning, match="could not be set aside") as caught:
        sols = find(h, PROBLEM, *_tensors(), mode="NORMAL")
    assert sols[0].solver == "Fast" and len(comp.jobs) == 2 and h.cache_disabled
    assert not any("set aside as" in str(w.message) for w in caught)
    assert ukdb.read_bytes() == b"\x13\x37" * 4096  # left as it was
