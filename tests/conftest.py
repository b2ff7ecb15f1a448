"""Every test runs hermetically: its home, caches and MIOpen database folders are its own
temporary folders, never the user's (~/.cache/miopenkernels, ~/.cache/uv, ~/.config/miopen).

The session gets one set (module-scoped fixtures run under it); each test then gets its own.
What an earlier run or another test left cannot change a result.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

# Inductor's CPU path imports setuptools (torch.utils.cpp_extension), and setuptools refuses to
# load once the standard library's distutils is in the process: a test that imported it earlier
# in the same worker would fail the Inductor test by order alone. Imported first, setuptools
# makes every later `import distutils` its own copy.
with contextlib.suppress(ImportError):
    import setuptools  # noqa: F401

# Variables that point at per-user state, and the folder each gets under the test's root.
_DIRS = {
    "HOME": "home",
    "XDG_CACHE_HOME": "home/.cache",
    "XDG_CONFIG_HOME": "home/.config",
    "XDG_DATA_HOME": "home/.local/share",
    "UV_CACHE_DIR": "uv-cache",
    "MIOPENKERNELS_CACHE": "object-cache",
    "MIOPEN_USER_DB_PATH": "miopen-user-db",
    "MIOPEN_CUSTOM_CACHE_DIR": "miopen-cache",
}
# A kernel cache prepared on purpose (the GPU machine scripts compile the test grid's objects
# on every core first): when named, the tests use it instead of an empty one.
_PREPARED_KERNEL_CACHE = os.environ.get("MIOPENKERNELS_TEST_KERNEL_CACHE", "")
# Variables that would make a test depend on the machine or the shell it runs from.
_UNSET = ("MIOPEN_DEVICE_ARCH", "MIOPEN_DEVICE_CU", "MIOPEN_FIND_MODE", "MIOPEN_FIND_ENFORCE",
          "MIOPEN_DISABLE_CACHE", "MIOPENKERNELS_KERNELS_DIR")


def _environment(root: Path) -> dict[str, str]:
    env = {}
    for name, rel in _DIRS.items():
        if name == "MIOPEN_CUSTOM_CACHE_DIR" and _PREPARED_KERNEL_CACHE:
            env[name] = _PREPARED_KERNEL_CACHE
            continue
        (root / rel).mkdir(parents=True, exist_ok=True)
        env[name] = str(root / rel)
    return env


@pytest.fixture(scope="session", autouse=True)
def _hermetic_session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    saved = dict(os.environ)
    os.environ.update(_environment(tmp_path_factory.mktemp("session-env")))
    for name in _UNSET:
        os.environ.pop(name, None)
    yield
    os.environ.clear()
    os.environ.update(saved)


@pytest.fixture(autouse=True)
def _hermetic_test(tmp_path_factory: pytest.TempPathFactory,
                   monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in _environment(tmp_path_factory.mktemp("env")).items():
        monkeypatch.setenv(name, value)
