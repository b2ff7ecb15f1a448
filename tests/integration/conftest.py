"""Integration tests build real kdbs for matrix-core targets (sm90, gfx1100): with the
tensor-core solvers each such build would also compile 40-150 Triton objects at a few seconds
each. They test the builder, packaging and the handle, not those kernels, so they run with
MIOPENKERNELS_TRITON=0; test_triton_compile.py and test_conv_triton_compile.py compile a
handful of Triton objects on purpose."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from miopenkernels.config import scoped_env

_TRITON_MODULES = ("test_triton_compile", "test_conv_triton_compile")


@pytest.fixture(autouse=True, scope="module")
def _no_triton_solvers(request: pytest.FixtureRequest) -> Iterator[None]:
    if request.module.__name__.rsplit(".", 1)[-1] in _TRITON_MODULES:
        yield
        return
    with scoped_env("MIOPENKERNELS_TRITON", "0"):
        yield
