"""What the text databases share: `key=value` lines, comments, and a cached read of a file that
other processes may replace at any time."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, TypeVar

from ..errors import DbError
from ._files import check_exists

__all__ = ["TextLine", "iter_lines", "read_text", "malformed", "CachedFile"]

T = TypeVar("T")


@dataclass(frozen=True)
class TextLine:
    number: int  # 1-based, as an editor shows it
    key: str
    value: str
    raw: str


def malformed(source: str, number: int, reason: str, raw: str) -> DbError:
    shown = raw if len(raw) <= 80 else raw[:77] + "..."
    return DbError(f"{source}:{number}: {reason}: {shown!r}; fix or delete that line")


# The largest text database MIOpen ships (a FindDb of every tuned problem of one arch) is tens
# of MiB; a file past this is not a database and is not read whole.
MAX_TEXT_DB_BYTES = 1 << 30


def read_text(path: Path, what: str) -> str:
    check_exists(path, what)
    size = path.stat().st_size
    if size > MAX_TEXT_DB_BYTES:
        raise DbError(f"{path} is {size >> 20} MiB, over the {MAX_TEXT_DB_BYTES >> 20} MiB "
                      f"a text {what} can be; check that the right file was given")
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise DbError(
            f"{path} is not a text {what} (it is not UTF-8); check that the right file was given"
        ) from None


def iter_lines(text: str, source: str) -> Iterator[TextLine]:
    """The `key=value` lines of a text db; blank lines and `#` comments are skipped."""
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.rstrip("\r")
        if not line.strip() or line.startswith("#"):
            continue
        key, sep, value = line.partition("=")
        if not sep or not key or not value:
            raise malformed(source, number, "not a '<key>=<value>' line", line)
        yield TextLine(number, key, value, line)


class CachedFile(Generic[T]):
    """A parsed file, parsed again only when its size or mtime changed (another process wrote)."""

    def __init__(self, path: Path, parse: Callable[[Path], T], empty: Callable[[], T]) -> None:
        self.path = path
        self._parse = parse
        self._empty = empty
        self._stamp: tuple[int, int] | None = None
        self._value: T | None = None

    def get(self) -> T:
        try:
            st = os.stat(self.path)
            stamp = (st.st_mtime_ns, st.st_size)
        except FileNotFoundError:
            self._stamp, self._value = None, None
            return self._empty()
        if self._value is None or stamp != self._stamp:
            self._value = self._parse(self.path)
            self._stamp = stamp
        return self._value
