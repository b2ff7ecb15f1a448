"""The one subprocess runner and the one atomic-write helper."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from miopenkernels import _fsutil
from miopenkernels._proc import run_tool
from miopenkernels.errors import CompileError, InstallError


def test_a_failing_tool_puts_its_output_in_the_error() -> None:
    code = "import sys; print('partial'); print('E: disk on fire', file=sys.stderr); sys.exit(3)"
    with pytest.raises(InstallError) as exc:
        run_tool([sys.executable, "-c", code], what="installing x", error=InstallError)
    assert "installing x failed (exit 3): E: disk on fire" in str(exc.value)
    assert "partial" in exc.value.log and sys.executable in exc.value.log
    with pytest.raises(CompileError, match="nope-cc is not installed") as cexc:
        run_tool(["nope-cc", "-c"], what="compiling", error=CompileError)
    assert cexc.value.exit_code == 8
    with pytest.raises(InstallError, match="did not finish in 0.2 s"):
        run_tool([sys.executable, "-c", "import time; time.sleep(5)"], what="w",
                 error=InstallError, timeout=0.2)
    proc = run_tool([sys.executable, "-c", "import sys; sys.exit(4)"], what="w", check=False)
    assert proc.returncode == 4


def test_env_adds_to_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MK_OUTER", "1")
    out = run_tool([sys.executable, "-c", "import os; print(os.environ['MK_OUTER'], "
                    "os.environ['MK_INNER'])"], what="env", env={"MK_INNER": "2"}).stdout
    assert out.split() == ["1", "2"]


def _count_fsyncs(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []
    real = os.fsync

    def fsync(fd: int) -> None:
        calls.append(fd)
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    return calls


def test_object_cache_and_index_pages_are_synced_before_the_rename(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every atomic write syncs the file and its folder (the cache and the index did not)."""
    from miopenkernels.builder.cache import ObjectCache
    from miopenkernels.builder.package.index import write_simple_index

    calls = _count_fsyncs(monkeypatch)
    cache = ObjectCache(tmp_path / "cache")
    path = cache.put("ab" * 32, b"blob")
    assert path.read_bytes() == b"blob" and len(calls) == 2
    whl = tmp_path / "miopenkernels_gfx90a_104-0.1.0-py3-none-any.whl"
    whl.write_bytes(b"wheel")
    write_simple_index([whl], tmp_path / "simple")
    assert len(calls) >= 2 + 2 * 3  # the copied wheel, its page, the root page
    assert not [p for p in tmp_path.rglob("*") if p.name.endswith((".tmp", ".part"))]


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temporary(tmp_path: Path) -> None:
    path = tmp_path / "f.txt"
    _fsutil.atomic_write(path, "old")
    with pytest.raises(RuntimeError), _fsutil.atomic_path(path) as tmp:
        tmp.write_text("half")
        raise RuntimeError("writer died")
    assert path.read_text() == "old" and os.listdir(tmp_path) == ["f.txt"]
    with _fsutil.atomic_path(path, create=False) as tmp:
        assert not tmp.exists()
        tmp.write_text("new")
    assert path.read_text() == "new"


def test_a_version_that_is_not_pep_440_is_a_package_build_error(tmp_path: Path) -> None:
    from miopenkernels.builder.package import package_targets
    from miopenkernels.errors import PackageBuildError

    with pytest.raises(PackageBuildError, match="not a PEP 440 version") as exc:
        package_targets([], tmp_path / "out", kind="wheel", version="banana")
    assert exc.value.exit_code == 15
