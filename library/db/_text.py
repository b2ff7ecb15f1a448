"""What the text databases share: `key=value` lines, comments, malformed lines skipped and
counted (as MIOpen skips them), a line longer than MAX_LINE_BYTES skipped without being held,
files read a line at a time, and a cached read of a file that other processes may replace at
any time."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import BinaryIO, Generic, TypeVar

from .._record import dataclass, field
from ..errors import DbError
from ._files import check_exists, open_regular

__all__ = ["TextLine", "Skipped", "split_line", "iter_lines", "read_lines",
           "raw_lines", "malformed", "CachedFile", "MAX_LINE_BYTES", "MAX_TEXT_DB_BYTES"]

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
# of MiB; a file past this is not a database and is not read.
MAX_TEXT_DB_BYTES = 1 << 30
# MIOpen's longest lines (a FindDb key with every solver measured, a PerfDb config with every
# tunable solver) are under 1 KiB; a line past this is skipped as malformed, never held whole.
MAX_LINE_BYTES = 1 << 20
TOO_LONG = f"line longer than {MAX_LINE_BYTES >> 20} MiB"


_READ_BLOCK = 1 << 20


def _line_blocks(fh: BinaryIO) -> Iterator[bytes | None]:
    """Runs of whole lines of a binary stream (`\\n`-joined, without the last `\\n`), read a
    block at a time; None for a line over MAX_LINE_BYTES, whose bytes are dropped as read."""
    rest = b""
    while True:
        block = fh.read(_READ_BLOCK)
        if not block:
            break
        data = rest + block
        nl = data.rfind(b"\n")
        if nl < 0:
            rest = data
            if len(rest) > MAX_LINE_BYTES:
                yield None
                rest = _skip_line(fh)
            continue
        yield data[:nl]
        rest = data[nl + 1:]
    if rest:  # the last line has no newline (or follows a skipped line in the last block)
        yield rest[:-1] if rest.endswith(b"\n") else rest


def _skip_line(fh: BinaryIO) -> bytes:
    """Read past the rest of an over-long line; what follows its `\\n` in the last block."""
    while True:
        block = fh.read(_READ_BLOCK)
        nl = block.find(b"\n")
        if not block or nl >= 0:
            return block[nl + 1:] if nl >= 0 else b""


def raw_lines(fh: BinaryIO) -> Iterator[bytes | None]:
    """The lines of a binary stream without their `\\n` (MIOpen's getline), None for a line
    over MAX_LINE_BYTES (never held whole)."""
    for block in _line_blocks(fh):
        if block is None:
            yield None
        else:
            for line in block.split(b"\n"):
                yield line if len(line) <= MAX_LINE_BYTES else None


def _check_size(path: Path, size: int, what: str) -> None:
    if size > MAX_TEXT_DB_BYTES:
        raise DbError(f"{path} is {size >> 20} MiB, over the {MAX_TEXT_DB_BYTES >> 20} MiB "
                      f"a text {what} can be; check that the right file was given")


def read_lines(path: Path, what: str) -> Iterator[str | None]:
    """The lines of a text database file, read a line at a time (None for one over
    MAX_LINE_BYTES); DbError for a file that is not a regular file, is too large or is not
    UTF-8 text."""
    check_exists(path, what)  # a Git LFS pointer is said as one
    with open_regular(path, what) as fh:
        _check_size(path, os.fstat(fh.fileno()).st_size, what)
        for block in _line_blocks(fh):
            if block is None:
                yield None
                continue
            try:
                text = block.decode("utf-8")
            except UnicodeDecodeError:
                raise DbError(f"{path} is not a text {what} (it is not UTF-8); check that the "
                              "right file was given") from None
            yield from text.split("\n")


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


def iter_lines(text: str | Iterable[str | None], source: str,
               skipped: Skipped | None = None) -> Iterator[TextLine]:
    """The `key=value` lines of a text db (its whole text, or its lines as `read_lines` gives
    them); blank lines and `#` comments are passed over. A malformed line, or one over
    MAX_LINE_BYTES, is counted in `skipped` (when given) and skipped, else it raises DbError.
    The value may be empty (a PerfDb config without entries)."""
    lines = text.splitlines() if isinstance(text, str) else text
    for number, raw in enumerate(lines, 1):
        try:
            if raw is None or len(raw) > MAX_LINE_BYTES:
                raw = ""
                raise ValueError(TOO_LONG)
            kv = split_line(raw)
        except ValueError as exc:
            shown = (raw or "").rstrip("\r")
            if skipped is None:
                raise malformed(source, number, str(exc), shown) from None
            skipped.add(number, str(exc), shown)
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
