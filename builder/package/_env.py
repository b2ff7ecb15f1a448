"""Environment variables set for the length of a block (rattler-build reads its inputs there)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def scoped_environ(values: dict[str, str]) -> Iterator[None]:
    """Set `values` in os.environ inside the block; restore what was there after it."""
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
