"""MIOpen's environment variables and database locations."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from miopenkernels import config
from miopenkernels.config import FindEnforce, FindMode, Paths
from miopenkernels.errors import MIOpenKernelsError


@pytest.mark.parametrize(
    ("text", "mode"),
    [
        (None, FindMode.DYNAMIC_HYBRID),
        ("", FindMode.DYNAMIC_HYBRID),
        ("NORMAL", FindMode.NORMAL),
        ("1", FindMode.NORMAL),
        ("fast", FindMode.FAST),
        ("2", FindMode.FAST),
        ("HYBRID", FindMode.HYBRID),
        ("3", FindMode.HYBRID),
        ("DYNAMIC_HYBRID", FindMode.DYNAMIC_HYBRID),
        ("5", FindMode.DYNAMIC_HYBRID),
    ],
)
def test_find_mode_names_and_numbers(text: str | None, mode: FindMode) -> None:
    assert FindMode.parse(text) is mode


@pytest.mark.parametrize("text", ["4", "6", "QUICK", "-1"])
def test_unknown_find_mode_names_the_variable_and_choices(text: str) -> None:
    with pytest.raises(MIOpenKernelsError, match=r"MIOPEN_FIND_MODE=.*NORMAL/1"):
        FindMode.parse(text)


def test_find_enforce_names_and_numbers() -> None:
    assert FindEnforce.parse("SEARCH_DB_UPDATE") is FindEnforce.SEARCH_DB_UPDATE
    assert FindEnforce.parse("5") is FindEnforce.DB_CLEAN
    assert FindEnforce.parse(None) is FindEnforce.NONE
    with pytest.raises(MIOpenKernelsError, match="MIOPEN_FIND_ENFORCE"):
        FindEnforce.parse("7")


def test_environment_overrides_every_location(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("MIOPEN_SYSTEM_DB_PATH", str(tmp_path / "sys"))
    monkeypatch.setenv("MIOPEN_USER_DB_PATH", str(tmp_path / "user"))
    monkeypatch.setenv("MIOPEN_CUSTOM_CACHE_DIR", str(tmp_path / "cache"))
    assert config.system_db_dirs() == [tmp_path / "sys"]
    assert config.user_db_dir() == tmp_path / "user"
    assert config.kernel_cache_dir() == tmp_path / "cache"


def test_defaults_follow_miopen_and_the_environment_prefix(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("MIOPEN_SYSTEM_DB_PATH", "MIOPEN_USER_DB_PATH", "MIOPEN_CUSTOM_CACHE_DIR"):
        monkeypatch.delenv(name, raising=False)
    assert config.system_db_dirs()[0] == Path(sys.prefix) / "share" / "miopen" / "db"
    assert config.user_db_dir() == Path.home() / ".config" / "miopen"
    assert config.kernel_cache_dir().parent == Path.home() / ".cache" / "miopen"


@pytest.mark.parametrize(("value", "disabled"), [("1", True), ("0", False), (None, False)])
def test_disable_cache(monkeypatch: pytest.MonkeyPatch, value: str | None, disabled: bool) -> None:
    if value is None:
        monkeypatch.delenv("MIOPEN_DISABLE_CACHE", raising=False)
    else:
        monkeypatch.setenv("MIOPEN_DISABLE_CACHE", value)
    assert config.cache_disabled() is disabled


def test_device_overrides(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MIOPEN_DEVICE_ARCH", "gfx90a:sramecc+:xnack-")
    monkeypatch.setenv("MIOPEN_DEVICE_CU", "110")
    assert config.device_overrides() == ("gfx90a:sramecc+:xnack-", 110)
    monkeypatch.setenv("MIOPEN_DEVICE_CU", "many")
    with pytest.raises(MIOpenKernelsError, match="MIOPEN_DEVICE_CU"):
        config.device_overrides()


def test_paths_use_miopen_file_names(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    system = tmp_path / "sys"
    system.mkdir()
    (system / "gfx90a6e.kdb").write_bytes(b"x")
    monkeypatch.setenv("MIOPEN_SYSTEM_DB_PATH", str(system))
    monkeypatch.setenv("MIOPEN_USER_DB_PATH", str(tmp_path / "user"))
    monkeypatch.setenv("MIOPEN_CUSTOM_CACHE_DIR", str(tmp_path / "cache"))
    paths = Paths.for_basename("gfx90a6e")
    assert paths.system_dir == system
    assert paths.system_finddb == system / "gfx90a6e.HIP.fdb.txt"
    assert paths.system_perfdb == system / "gfx90a6e.db"
    assert paths.system_kdb == system / "gfx90a6e.kdb"
    assert paths.user_perfdb.name == "gfx90a6e_1.1.0.udb"
    assert paths.user_finddb.name.startswith("gfx90a6e.HIP.")
    assert paths.user_finddb.name.endswith(".ufdb.txt")
    assert paths.user_kdb == tmp_path / "cache" / "gfx90a6e.ukdb"
    assert Paths.for_basename("gfx906_60").system_dir is None
    # <basename>.kdb first, then <arch>.kdb, as MIOpen looks for them.
    (system / "gfx90a.kdb").write_bytes(b"x")
    assert Paths.for_basename("gfx90a68").system_kdb == system / "gfx90a.kdb"
    assert Paths.for_basename("gfx90a6e").system_kdb == system / "gfx90a6e.kdb"
    (system / "gfx906.kdb").write_bytes(b"x")
    assert Paths.for_basename("gfx906_60").system_dir == system
