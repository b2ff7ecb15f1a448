"""What the torch tests (unit, on the null backend, and gpu) share: telling which route a
miopenkernels.torch call took."""

from __future__ import annotations

from typing import Any

import pytest
from torch.utils._python_dispatch import TorchDispatchMode


class Passing(TorchDispatchMode):
    """A dispatch mode that changes nothing: each op runs as it was, with the mode in between
    (in the backward pass too), so calls take the custom ops."""

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001, ANN204
        return func(*args, **(kwargs or {}))


def count_eager_runs(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """The calls that the eager path's remembered launch serves from now on (an entry each)."""
    from miopenkernels.torch import _eager

    runs: list[object] = []
    real = _eager.run

    def counting(entry: Any, *args: Any) -> Any:
        runs.append(entry)
        return real(entry, *args)

    monkeypatch.setattr(_eager, "run", counting)
    return runs
