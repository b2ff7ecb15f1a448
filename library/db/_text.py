"""What the text databases share: `key=value` lines, comments, malformed lines skipped and
counted (as MIOpen skips them), and a cached read of a file that other processes may replace at
any time."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Generic, TypeVar

from .._record import dataclass, field
from ..errors import DbError
from ._files import check_exists

__all__ = ["TextLine", "Skipped", "split_line", "iter_lines", "read_text", "malformed",
           "CachedFile"]

T = TypeVar("T")


@dataclass(frozen=True)
class TextLine:
    number: int  # 1-based, as an editor shows it
    key: str
    value: str
    raw: str


@dataclass
class Skipped:
    """Malformed lines a reader skipped: their count and the first few, said once."""

    source: str
    count: int = 0
    first: list[str] = field(default_factory=list)

    def add(self, number: int, reason: str, raw: str) -> None:
        self.count += 1
        if len(self.first) < 5:
            shown = raw if len(raw) <= 80 else raw[:77] + "..."
            self.first.append(f"{self.source}:{number}: {reason}: {shown!r}")

    def summary(self) -> str:
        return (f"{self.source}: {self.count} malformed line(s) skipped, as MIOpen skips them"
                + (f" (first: {self.first[0]})" if self.first else ""))


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


def split_line(raw: str) -> tuple[str, str] | None:
    """(key, value) of a data line; None for a blank line or `#` comment. ValueError when the
    line is not `<key>=<value>` (MIOpen: 'key not found', the line is skipped)."""
    line = raw.rstrip("\r")
    if not line.strip() or line.startswith("#"):
        return None
    key, sep, value = line.partition("=")
    if not sep or not key:
        raise ValueError("not a '<key>=<value>' line")
    return key, value


def iter_lines(text: str, source: str, skipped: Skipped | None = None) -> Iterator[TextLine]:
    """The `key=value` lines of a text db; blank lines and `#` comments are passed over. A
    malformed line is counted in `skipped` (when given) and skipped, else it raises DbError.
    The value may be empty (a PerfDb config without entries)."""
    for number, raw in enumerate(text.splitlines(), 1):
        try:
            kv = split_line(raw)
        except ValueError as exc:
            if skipped is None:
                raise malformed(source, number, str(exc), raw.rstrip("\r")) from None
            skipped.add(number, str(exc), raw.rstrip("\r"))
            continue
        if kv is not None:
            yield TextLine(number, kv[0], kv[1], raw.rstrip("\r"))


class CachedFile(Generic[T]):
    """A parsed file, parsed again only when its size or mtime changed (another process wrote)."""

    def __init__(self, path: Path, parse: Callable[[Path], T], empty: Callable[[], T]) -> None:
        self.path = path
        self._where = os.fspath(path)  # stat'ed on every read: no Path conversion each time
        self._parse = parse
        self._empty = empty
        self._stamp: tuple[int, int] | None = None
        self._value: T | None = None
        self._none: T | None = None  # what a missing file reads as, made once

    def get(self) -> T:
        if self._value is None and self._none is not None and \
                not os.access(self._where, os.F_OK):
            # Still missing (a user database nothing was recorded in yet, the usual case with
            # an installed package): said by a call that raises nothing.
            return self._none
        try:
            st = os.stat(self._where)
            stamp = (st.st_mtime_ns, st.st_size)
        except FileNotFoundError:
            self._stamp, self._value = None, None
            if self._none is None:
                self._none = self._empty()
            return self._none
        if self._value is None or stamp != self._stamp:
            self._value = self._parse(self.path)
            self._stamp = stamp
        return self._value
