"""Object cache keys and storage: a key changes exactly when the code object could."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest
from miopenkernels.builder import cache as cache_mod
from miopenkernels.builder.cache import CACHE_ENV, CacheKeys, ObjectCache, default_cache_dir
from miopenkernels.solvers.base import CompileJob
from miopenkernels.target import Target

KERNELS = Path(__file__).resolve().parents[1] / "fixtures" / "builder" / "kernels"


@dataclass
class _FakeCompiler:
    name: str
    version: str

    def identity(self) -> str:
        return f"{self.name} [{self.version}]"


@pytest.fixture()
def kernels(tmp_path: Path) -> Path:
    dest = tmp_path / "kernels"
    shutil.copytree(KERNELS, dest)
    return dest


@pytest.fixture()
def fake_compiler(monkeypatch: pytest.MonkeyPatch) -> _FakeCompiler:
    """No real compiler needed: the key only asks the compiler who it is."""
    fake = _FakeCompiler("clang-19", "19.1.7")
    monkeypatch.setattr(cache_mod, "job_compiler", lambda job: fake)
    return fake


def job(options: tuple[str, ...] = ("-DFX_SCALE=2.0f",), target: str = "gfx906-60",
        file: str = "fx_scale.hip") -> CompileJob:
    return CompileJob(file, options, file.split(".")[0], Target.parse(target))


def test_same_inputs_same_key(kernels: Path, fake_compiler: _FakeCompiler) -> None:
    assert CacheKeys(kernels).key(job()) == CacheKeys(kernels).key(job())


def test_key_changes_with_source(kernels: Path, fake_compiler: _FakeCompiler) -> None:
    before = CacheKeys(kernels).key(job())
    src = kernels / "fx_scale.hip"
    src.write_text(src.read_text() + "\n// a comment changes the text, so the key\n")
    assert CacheKeys(kernels).key(job()) != before


def test_key_changes_with_an_included_header(kernels: Path, fake_compiler: _FakeCompiler) -> None:
    before = CacheKeys(kernels).key(job())
    other = CacheKeys(kernels).key(job(("-DFX_SHIFT=1.0f",), file="fx_shift.hip"))
    header = kernels / "fx_portable.h"
    header.write_text(header.read_text() + "\n#define FX_UNUSED 1\n")
    assert CacheKeys(kernels).key(job()) != before
    assert CacheKeys(kernels).key(job(("-DFX_SHIFT=1.0f",), file="fx_shift.hip")) != other


def test_key_changes_with_options(kernels: Path, fake_compiler: _FakeCompiler) -> None:
    keys = CacheKeys(kernels)
    assert keys.key(job(("-DFX_SCALE=2.0f",))) != keys.key(job(("-DFX_SCALE=3.0f",)))
    assert keys.key(job(("-DFX_SCALE=2.0f",))) != keys.key(job(("-DFX_SCALE=2.0f", "-DFX_N=4")))


def test_key_changes_with_compiler_version(kernels: Path, fake_compiler: _FakeCompiler) -> None:
    before = CacheKeys(kernels).key(job())
    fake_compiler.version = "19.1.8"
    assert CacheKeys(kernels).key(job()) != before
    fake_compiler.version, fake_compiler.name = "19.1.7", "hipcc"
    assert CacheKeys(kernels).key(job()) != before


def test_key_changes_with_arch_not_with_cu_count(kernels: Path,
                                                 fake_compiler: _FakeCompiler) -> None:
    keys = CacheKeys(kernels)
    assert keys.key(job(target="gfx900-56")) == keys.key(job(target="gfx900-64"))
    assert keys.key(job(target="gfx900-56")) != keys.key(job(target="gfx906-60"))


def test_key_uses_the_real_compiler_identity(kernels: Path) -> None:
    """The real identity names the compiler's version; NVRTC's is read in-process."""
    pytest.importorskip("cuda.bindings.nvrtc")
    ident = CacheKeys(kernels).compiler(job(target="sm90-132"))
    assert ident.startswith("nvrtc [") and "-std=c++17" in ident


def test_cache_put_get_round_trip_leaves_no_temporary(tmp_path: Path) -> None:
    cache = ObjectCache(tmp_path / "c")
    key = "ab" + "0" * 62
    assert cache.get(key) is None and key not in cache
    path = cache.put(key, b"\x7fELF object")
    assert cache.get(key) == b"\x7fELF object" and key in cache
    assert path.parent.name == "ab"
    assert [p.name for p in path.parent.iterdir()] == [path.name]


def test_cache_dir_from_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "objs"))
    assert default_cache_dir() == tmp_path / "objs"
    assert ObjectCache().root == tmp_path / "objs"
    monkeypatch.delenv(CACHE_ENV)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_dir() == tmp_path / "xdg" / "miopenkernels" / "objects"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert default_cache_dir() == Path.home() / ".cache" / "miopenkernels" / "objects"
