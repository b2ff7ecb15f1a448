"""Reading a committed result: bench/results/ keeps older runs' JSON gzip-compressed
(`NAME.json.gz`); the readers take either form."""

from __future__ import annotations

import gzip
import json
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
