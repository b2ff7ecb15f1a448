"""GPU tests: skipped unless a CUDA device answers cuInit/cuDeviceGetCount.

MIOPENKERNELS_HIDE_TRITON=1 makes `import triton` fail in the test process (a meta-path
blocker), so the Triton solvers run from precompiled objects alone, as on a runtime install.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pytest
from miopenkernels.backends import cuda

if TYPE_CHECKING:
    from miopenkernels.handle import Handle


class TritonBlocker:
    """A meta-path finder that refuses `triton` and its submodules."""

    def find_spec(self, name: str, path: object = None, target: object = None) -> None:
        if name == "triton" or name.startswith("triton."):
            raise ImportError(f"{name} is hidden (MIOPENKERNELS_HIDE_TRITON=1)")
        return None


if os.environ.get("MIOPENKERNELS_HIDE_TRITON") == "1":
    sys.meta_path.insert(0, TritonBlocker())
    for _name in [m for m in sys.modules if m == "triton" or m.startswith("triton.")]:
        del sys.modules[_name]


def _has_gpu() -> bool:
    return cuda.device_count() > 0


HAS_GPU = _has_gpu()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    skip = pytest.mark.skip(reason="no CUDA GPU (cuInit/cuDeviceGetCount found none)")
    for item in items:
        if "tests/gpu" in str(item.fspath).replace("\\", "/"):
            item.add_marker(pytest.mark.gpu)
            if not HAS_GPU:
                item.add_marker(skip)


@pytest.fixture(scope="session")
def backend() -> cuda.CudaBackend:
    return cuda.CudaBackend(0)


@pytest.fixture()
def handle(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Handle:
    """A fresh Handle over databases of its own: no system package, an empty user database and
    cache, the default find mode (a module's own `handle` fixture overrides this one)."""
    from miopenkernels.handle import Handle

    monkeypatch.setenv("MIOPEN_SYSTEM_DB_PATH", str(tmp_path / "none"))
    monkeypatch.setenv("MIOPEN_USER_DB_PATH", str(tmp_path / "user"))
    monkeypatch.setenv("MIOPEN_CUSTOM_CACHE_DIR", str(tmp_path / "cache"))
    for var in ("MIOPEN_FIND_MODE", "MIOPEN_FIND_ENFORCE", "MIOPEN_DISABLE_CACHE"):
        monkeypatch.delenv(var, raising=False)
    return Handle()


@pytest.fixture()
def rng() -> np.random.Generator:
    # Fresh inputs on every run: the seed comes from the OS, and is printed on failure.
    seed = int(np.random.SeedSequence().entropy % 2**32)
    print(f"seed {seed}")
    return np.random.default_rng(seed)
