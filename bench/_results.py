"""Reading a committed result: bench/results/ keeps older runs' JSON gzip-compressed
(`NAME.json.gz`); the readers take either form. Writing one: `emit` (a result's JSON and
markdown beside each other, and what a script prints). A GPU run stopped by its time limit
(`timeout`'s SIGTERM) still writes what it measured: `stop_on_sigterm`."""

from __future__ import annotations

import contextlib
import gzip
import json
import math
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

MAX_BYTES = 512 << 20  # a result's JSON is tens of MB at most; past this it is not one


def read_json(path: str | Path, limit: int = MAX_BYTES) -> Any:
    """The JSON of `path`, inflated first where it ends in .gz, refused (ValueError) past
    `limit` bytes of text before parsing it."""
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as f:
        data = f.read(limit + 1)
    if len(data) > limit:
        raise ValueError(f"{path}: over {limit >> 20} MiB of JSON, not a result")
    return json.loads(data.decode("utf-8"))


def quantile(values: list[float], q: float) -> float:
    """The `q` point of `values` (the smallest value at or above that share of them)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


def emit(result: Any, md: str, out: Path | None, as_json: bool) -> None:
    """Write `result` to OUT.json and `md` to OUT.md where `out` is given, and print the JSON
    (`as_json`) or the markdown."""
    if out:
        out.parent.mkdir(parents=True, exist_ok=True)
        Path(str(out) + ".json").write_text(json.dumps(result, indent=1) + "\n")
        Path(str(out) + ".md").write_text(md)
    print(json.dumps(result, indent=1) if as_json else md, end="")


class Stopped(BaseException):
    """SIGTERM arrived during a run (`stop_on_sigterm`). A BaseException, as KeyboardInterrupt
    is: the runs' `except Exception` around one problem does not take it for that problem's
    failure."""


@contextlib.contextmanager
def stop_on_sigterm() -> Iterator[None]:
    """Inside: the first SIGTERM raises Stopped in the main thread (once the call in flight
    returns), so that a run stopped by `timeout` leaves its loop and writes what it measured; a
    second SIGTERM acts as it did before."""
    previous: Any = None

    def stop(signum: int, frame: Any) -> None:
        del signum, frame
        signal.signal(signal.SIGTERM, previous)
        raise Stopped

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
