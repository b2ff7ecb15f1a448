"""GPU tests: skipped unless a CUDA device answers cuInit/cuDeviceGetCount."""

from __future__ import annotations

import numpy as np
import pytest
from miopenkernels.backends import cuda


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
def rng() -> np.random.Generator:
    # Fresh inputs on every run: the seed comes from the OS, and is printed on failure.
    seed = int(np.random.SeedSequence().entropy % 2**32)
    print(f"seed {seed}")
    return np.random.default_rng(seed)
