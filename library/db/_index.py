"""Key indexes of large read-only databases, built once and kept beside the user databases.

A system FindDb or text PerfDb may hold hundreds of thousands of lines (AMD's gfx90a68 FindDb:
193,590 lines, 60 MB). Answering one key must not parse the file: the file is memory-mapped
and a `LineIndex` says where the lines of a key start. The index holds the CRC-32 of every key,
sorted, with the line's offset and number; a lookup bisects it and compares the key on the line
itself, so a hash collision or a stale index can never give a wrong record. It is written once
per version of the file under `<user db dir>/index/`, stamped with the file's size, mtime and a
hash of its first and last MiB, so that a later process opens it in microseconds. Files under
`PERSIST_MIN_BYTES` are indexed in memory only. Any line order works (MIOpen's system files are
sorted; user files are not).
"""

from __future__ import annotations

import bisect
import contextlib
import mmap
import os
import struct
import zlib
from array import array
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .._log import get_logger
from ..errors import DbError
from ._files import check_exists
from ._text import Skipped

__all__ = ["LineIndex", "file_stamp", "index_path", "PERSIST_MIN_BYTES"]

log = get_logger(__name__)

PERSIST_MIN_BYTES = 1 << 20
_MAGIC = b"MKLIDX01"
_HEADER = struct.Struct("<8sQqQQ32s")  # magic, size, mtime_ns, lines, malformed, digest
_SAMPLE = 1 << 20


def _sha256(data: bytes = b"") -> Any:
    """SHA-256: the interpreter's own module where it has one (no OpenSSL to load on a
    runtime's first lookup), else hashlib's."""
    try:
        from _sha256 import sha256  # Python 3.10, 3.11
    except ImportError:
        try:
            from _sha2 import sha256  # Python 3.12 and later
        except ImportError:  # pragma: no cover - builds without either
            from hashlib import sha256
    return sha256(data)


def file_stamp(path: Path) -> tuple[int, int, bytes]:
    """(size, mtime_ns, sha256 of the first and last MiB): what an index of `path` is valid for."""
    st = os.stat(path)
    h = _sha256()
    with path.open("rb") as fh:
        h.update(fh.read(_SAMPLE))
        if st.st_size > _SAMPLE:
            fh.seek(max(_SAMPLE, st.st_size - _SAMPLE))
            h.update(fh.read(_SAMPLE))
    return st.st_size, st.st_mtime_ns, h.digest()


def index_path(path: Path, index_dir: Path, suffix: str) -> Path:
    """Where the index of `path` is kept: its name and a hash of its full path."""
    where = _sha256(str(path.resolve()).encode()).hexdigest()[:12]
    return index_dir / f"{path.name}.{where}{suffix}"


def _key_hash(key: bytes) -> int:
    return zlib.crc32(key)


class LineIndex:
    """The lines of each key of one text database file, read through a memory map."""

    def __init__(self, path: Path, index_dir: Path | None = None) -> None:
        self.path = path
        check_exists(path, "database")
        self._fh = path.open("rb")
        size = os.fstat(self._fh.fileno()).st_size
        self._mm: Any = (mmap.mmap(self._fh.fileno(), 0, access=mmap.ACCESS_READ)
                         if size else b"")
        self.skipped = Skipped(str(path))
        self.built = False  # True when this process built the index (no kept index matched)
        self._index_mm: Any = None
        self._hashes: Any
        self._offsets: Any
        self._numbers: Any
        stamp = file_stamp(path) if size >= PERSIST_MIN_BYTES else None
        kept = index_path(path, index_dir, ".idx") if index_dir and stamp else None
        if kept is None or not self._open_kept(kept, stamp):
            self._build()
            if kept is not None and stamp is not None:
                self._keep(kept, stamp)

    # ------------------------------------------------------------------ index file
    def _open_kept(self, kept: Path, stamp: Any) -> bool:
        try:
            with kept.open("rb") as fh:
                mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        except (OSError, ValueError):
            return False
        if len(mm) < _HEADER.size:
            mm.close()
            return False
        magic, size, mtime, n, bad, digest = _HEADER.unpack_from(mm, 0)
        if magic != _MAGIC or (size, mtime, digest) != stamp or \
                len(mm) != _HEADER.size + 24 * n:
            mm.close()
            return False
        view = memoryview(mm)[_HEADER.size:]
        self._hashes = view[: 8 * n].cast("Q")
        self._offsets = view[8 * n: 16 * n].cast("Q")
        self._numbers = view[16 * n:].cast("Q")
        self.skipped.count = bad
        self._index_mm = mm
        return True

    def _keep(self, kept: Path, stamp: Any) -> None:
        from ._lock import atomic_write

        size, mtime, digest = stamp
        n = len(self._hashes)
        data = b"".join([_HEADER.pack(_MAGIC, size, mtime, n, self.skipped.count, digest),
                         self._hashes.tobytes(), self._offsets.tobytes(),
                         self._numbers.tobytes()])
        try:
            atomic_write(kept, data)
        except OSError as exc:  # a read-only home: the index lives in this process only
            log.debug("could not keep the index of %s at %s: %s", self.path, kept, exc)

    def _build(self) -> None:
        """One pass over the file: the (hash, line) of every `key=` line, sorted by hash. Read
        through a buffer, not the map, so that the pass leaves no file pages in this process."""
        self.built = True
        entries: list[int] = []
        offsets = array("Q")
        numbers = array("Q")
        pos = 0
        with self.path.open("rb") as fh:
            for number, line in enumerate(fh, 1):
                key, sep, _ = line.partition(b"=")
                if sep and key:
                    entries.append((_key_hash(key) << 32) | len(offsets))
                    offsets.append(pos)
                    numbers.append(number)
                elif line.strip() and not line.startswith(b"#"):
                    self.skipped.add(number, "not a '<key>=<value>' line",
                                     line.rstrip(b"\r\n").decode("utf-8", "replace"))
                pos += len(line)
        entries.sort()  # by hash, then by line: a key's lines stay in file order
        mask = (1 << 32) - 1
        self._hashes = array("Q", (e >> 32 for e in entries))
        self._offsets = array("Q", (offsets[e & mask] for e in entries))
        self._numbers = array("Q", (numbers[e & mask] for e in entries))

    # ------------------------------------------------------------------ reading
    def __len__(self) -> int:
        """Data lines (`key=value`), duplicates of a key included."""
        return len(self._hashes)

    def _line_at(self, offset: int) -> bytes:
        nl = self._mm.find(b"\n", offset)
        return bytes(self._mm[offset: len(self._mm) if nl < 0 else nl]).rstrip(b"\r")

    def lines(self, key: str) -> Iterator[tuple[int, str]]:
        """(line number, line) of every line of `key`, in file order (lines of one hash are
        sorted by line in the index)."""
        want = key.encode()
        h = _key_hash(want)
        hashes = self._hashes
        i = bisect.bisect_left(hashes, h)
        n = len(hashes)
        while i < n and hashes[i] == h:
            raw = self._line_at(self._offsets[i])
            if raw.partition(b"=")[0] == want:
                number = int(self._numbers[i])
                try:
                    yield number, raw.decode("utf-8")
                except UnicodeDecodeError:
                    raise DbError(f"{self.path}:{number} is not UTF-8 text; check that the right "
                                  "file was given") from None
            i += 1

    def first(self, key: str) -> tuple[int, str] | None:
        """The first line of `key` (the one MIOpen's lookup returns), or None."""
        return next(self.lines(key), None)

    def close(self) -> None:
        for attr in ("_hashes", "_offsets", "_numbers"):
            view = getattr(self, attr, None)
            if isinstance(view, memoryview):
                view.release()
        for mm in (self._index_mm, self._mm):
            if isinstance(mm, mmap.mmap):
                # A view still alive keeps the map; it goes with the view.
                with contextlib.suppress(BufferError):
                    mm.close()
        self._fh.close()
