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

The first process on a large file does not wait for the index: its first lookup searches the
map for `\\n<key>=` (one pass at memory speed) and only then starts building the index on a
thread, so that the work between the first lookup and the next overlaps it; a later lookup
waits for the index. A data line is `<key>=<value>` with a key that is not empty and does not
start with `#`, the lines `split_line` reads.
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
from typing import TYPE_CHECKING, Any

from .._log import get_logger
from ..errors import DbError
from ._files import check_exists
from ._text import MAX_LINE_BYTES, TOO_LONG, Skipped

if TYPE_CHECKING:
    import threading

__all__ = ["LineIndex", "file_stamp", "index_path", "PERSIST_MIN_BYTES"]

log = get_logger(__name__)

PERSIST_MIN_BYTES = 1 << 20
_MAGIC = b"MKLIDX02"
_HEADER = struct.Struct("<8sQqQQ32s")  # magic, size, mtime_ns, lines, malformed, digest
_SAMPLE = 1 << 20
# The map is read in blocks of this size and each block's pages are given back after use, so
# that a pass over the file does not leave the whole file in this process's memory.
_BLOCK = 4 << 20
_NL, _EQ, _HASH = 10, 61, 35  # b"\n", b"=", b"#"


def _sha256(data: bytes = b"") -> Any:
    """SHA-256 (of a path, for the kept index's name): the interpreter's own module where it has
    one (no OpenSSL to load on a runtime's first lookup), else hashlib's."""
    try:
        from _sha256 import sha256  # Python 3.10, 3.11
    except ImportError:
        try:
            from _sha2 import sha256  # Python 3.12 and later
        except ImportError:  # pragma: no cover - builds without either
            from hashlib import sha256
    return sha256(data)


def _digest() -> Any:
    """A 32-byte BLAKE2b from the interpreter's own module (no OpenSSL to load on a runtime's
    first lookup; about four times the speed of its SHA-256 over the 2 MiB a stamp reads),
    else hashlib's."""
    try:
        from _blake2 import blake2b
    except ImportError:  # pragma: no cover - builds without it
        from hashlib import blake2b
    return blake2b(digest_size=32)


def file_stamp(path: Path) -> tuple[int, int, bytes]:
    """(size, mtime_ns, BLAKE2b of the first and last MiB): what an index of `path` is valid
    for."""
    st = os.stat(path)
    h = _digest()
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


def _drop_pages(mm: Any, start: int, end: int) -> None:
    """Give back the pages of [start, end) of a read-only file map (they stay in the page
    cache; touching them again reads them from there)."""
    start -= start % mmap.PAGESIZE
    with contextlib.suppress(OSError, ValueError, AttributeError):
        mm.madvise(mmap.MADV_DONTNEED, start, end - start)


def _find_newline(mm: Any, start: int, size: int) -> int:
    """The next newline from `start`, searched a block at a time with each block's pages given
    back, so that a line of hundreds of MiB never sits in memory whole."""
    while start < size:
        end = min(size, start + _BLOCK)
        nl = mm.find(b"\n", start, end)
        _drop_pages(mm, start, end)
        if nl >= 0:
            return int(nl)
        start = end
    return -1


def _index_lines(mm: Any, size: int, skipped: Skipped) -> tuple[array[int], array[int], array[int]]:
    """(CRC-32 of the key, offset, line number) of every data line, sorted by CRC and then by
    line. A small file (the runtime's own databases) line by line; a large one with numpy
    (imported for it only, on the index thread), a block at a time."""
    if size < PERSIST_MIN_BYTES:
        return _index_small(mm, size, skipped)
    return _index_large(mm, size, skipped)


def _index_small(mm: Any, size: int, skipped: Skipped) -> tuple[array[int], array[int], array[int]]:
    entries: list[int] = []
    offsets, numbers = array("Q"), array("Q")
    lines = mm[:size].split(b"\n")
    if lines[-1] == b"":
        lines.pop()  # the file ends with a newline: no line after it
    pos = 0
    for number, line in enumerate(lines, 1):
        key, sep, _ = line.partition(b"=")
        if sep and key and not key.startswith(b"#"):
            entries.append((zlib.crc32(key) << 32) | len(offsets))
            offsets.append(pos)
            numbers.append(number)
        else:
            raw = line.rstrip(b"\r")
            if raw.strip() and not raw.startswith(b"#"):
                skipped.add(number, "not a '<key>=<value>' line", raw.decode("utf-8", "replace"))
        pos += len(line) + 1
    entries.sort()  # by hash, then by line: a key's lines stay in file order
    mask = (1 << 32) - 1
    return (array("Q", [e >> 32 for e in entries]),
            array("Q", [offsets[e & mask] for e in entries]),
            array("Q", [numbers[e & mask] for e in entries]))


def _index_large(mm: Any, size: int, skipped: Skipped) -> tuple[array[int], array[int], array[int]]:
    import numpy as np

    hashes, offsets, numbers = array("Q"), array("Q"), array("Q")
    begin, first_number = 0, 1
    while begin < size:
        end = min(size, begin + _BLOCK)
        buf = np.frombuffer(mm, np.uint8, count=end - begin, offset=begin)
        ends = np.flatnonzero(buf == _NL)  # line i ends at its newline ...
        if end < size and not len(ends):  # a line longer than a block
            del buf
            nl = _find_newline(mm, end, size)
            line_end = size if nl < 0 else nl
            if line_end - begin > MAX_LINE_BYTES:  # skipped, never held
                skipped.add(first_number, TOO_LONG, "")
                _drop_pages(mm, begin, line_end)
                first_number += 1
                begin = line_end + 1
                continue
            end = min(size, line_end + 1)
            buf = np.frombuffer(mm, np.uint8, count=end - begin, offset=begin)
            ends = np.flatnonzero(buf == _NL)
        if end < size:
            end = begin + int(ends[-1]) + 1
            buf = buf[: end - begin]
        elif not len(ends) or ends[-1] != len(buf) - 1:
            ends = np.append(ends, len(buf))  # ... or at the end of the file
        starts = np.empty(len(ends), np.int64)
        starts[:1] = 0
        starts[1:] = ends[:-1] + 1
        eqs = np.flatnonzero(buf == _EQ)
        eq = np.append(eqs, len(buf))[np.searchsorted(eqs, starts)]  # first '=' of each line
        lead = buf[np.minimum(starts, len(buf) - 1)]
        long = (ends - starts) > MAX_LINE_BYTES
        data = (eq < ends) & (eq > starts) & (lead != _HASH) & ~long
        numbers_here = np.arange(first_number, first_number + len(ends), dtype=np.uint64)
        for i in np.flatnonzero(~data).tolist():
            if long[i]:
                skipped.add(first_number + i, TOO_LONG, "")
                continue
            raw = bytes(buf[starts[i]: ends[i]]).rstrip(b"\r")
            if raw.strip() and not raw.startswith(b"#"):
                skipped.add(first_number + i, "not a '<key>=<value>' line",
                            raw.decode("utf-8", "replace"))
        line_starts = starts[data] + begin
        hashes.extend(map(zlib.crc32, map(mm.__getitem__, map(
            slice, line_starts.tolist(), (eq[data] + begin).tolist()))))
        offsets.frombytes(line_starts.astype(np.uint64).tobytes())
        numbers.frombytes(numbers_here[data].tobytes())
        del buf, lead
        _drop_pages(mm, begin, end)
        first_number += len(ends)
        begin = end
    order = np.argsort(np.frombuffer(hashes, np.uint64), kind="stable")
    return _reorder(hashes, order), _reorder(offsets, order), _reorder(numbers, order)


def _reorder(values: array[int], order: Any) -> array[int]:
    import numpy as np

    out = array("Q")
    out.frombytes(np.frombuffer(values, np.uint64)[order].tobytes())
    return out


class LineIndex:
    """The lines of each key of one text database file, read through a memory map."""

    def __init__(self, path: Path, index_dir: Path | None = None, *, build: bool = True) -> None:
        """`build=False` (a one-shot reader such as `db lookup`): with no kept index, every
        lookup is a search of the map and no index is built or kept."""
        self.path = path
        self._build_wanted = build
        check_exists(path, "database")
        self._fh = path.open("rb")
        self._size = os.fstat(self._fh.fileno()).st_size
        self._mm: Any = (mmap.mmap(self._fh.fileno(), 0, access=mmap.ACCESS_READ)
                         if self._size else b"")
        self.skipped = Skipped(str(path))
        self.built = False  # True when this process built the index (no kept index matched)
        self._index_mm: Any = None
        self._hashes: Any = array("Q")
        self._offsets: Any = array("Q")
        self._numbers: Any = array("Q")
        self._ready = False
        self._builder: threading.Thread | None = None
        self._lock: Any = None  # made with the builder: a small file is indexed at once
        self._stamp = file_stamp(path) if self._size >= PERSIST_MIN_BYTES else None
        self._kept = index_path(path, index_dir, ".idx") if index_dir and self._stamp else None
        if self._kept is not None and self._open_kept(self._kept, self._stamp):
            self._ready = True
            return
        self.built = True
        if self._stamp is None:  # small: indexed now, in memory only
            self._build()
        else:
            import threading

            self._lock = threading.Lock()

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

    def _keep(self, kept: Path, stamp: Any, index: tuple[array[int], array[int], array[int]],
              bad: int) -> None:
        from ._lock import atomic_write

        size, mtime, digest = stamp
        hashes, offsets, numbers = index
        data = b"".join([_HEADER.pack(_MAGIC, size, mtime, len(hashes), bad, digest),
                         hashes.tobytes(), offsets.tobytes(), numbers.tobytes()])
        try:
            atomic_write(kept, data)
        except OSError as exc:  # a read-only home: the index lives in this process only
            log.debug("could not keep the index of %s at %s: %s", self.path, kept, exc)

    def _build(self) -> None:
        """Index the file (on its own map, so that `close` never pulls one from under it),
        publish the index, then keep it for later processes."""
        skipped = Skipped(str(self.path))
        if self._size:
            with self.path.open("rb") as fh:
                mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
                try:
                    index = _index_lines(mm, min(self._size, len(mm)), skipped)
                finally:
                    mm.close()
        else:
            index = (array("Q"), array("Q"), array("Q"))
        self._hashes, self._offsets, self._numbers = index
        self.skipped.count += skipped.count
        self.skipped.first[:0] = skipped.first[: max(0, 5 - len(self.skipped.first))]
        self._ready = True
        if self._kept is not None and self._stamp is not None:
            self._keep(self._kept, self._stamp, index, skipped.count)

    def _build_in_background(self) -> None:
        try:
            self._build()
        except Exception as exc:  # noqa: BLE001 - the lookup that waits builds again, and says it
            log.debug("building the index of %s failed: %s", self.path, exc)

    def _start_builder(self) -> None:
        import threading

        # Not a daemon: a process that ends right after its first lookup still keeps the index.
        self._builder = threading.Thread(target=self._build_in_background,
                                         name=f"index {self.path.name}")
        self._builder.start()

    def wait(self) -> None:
        """Block until the index is built (at once when it was kept or is built)."""
        if self._ready:
            return
        with self._lock:
            if self._ready:
                return
            if self._builder is not None:
                self._builder.join()
            if not self._ready:
                # No builder yet, it failed, or this is a forked child that has none: build
                # here (an error of the file itself is said here, to the caller).
                self._builder = None
                self._build()

    # ------------------------------------------------------------------ reading
    def __len__(self) -> int:
        """Data lines (`key=value`), duplicates of a key included."""
        self.wait()
        return len(self._hashes)

    def _end_of_line(self, offset: int) -> int | None:
        """Where the line at `offset` ends; None when it is over MAX_LINE_BYTES (such a line
        is no record: it is never copied out of the map)."""
        limit = min(len(self._mm), offset + MAX_LINE_BYTES + 1)
        nl = int(self._mm.find(b"\n", offset, limit))
        if nl < 0:
            if limit < len(self._mm) or limit - offset > MAX_LINE_BYTES:
                return None
            nl = limit
        return nl

    def _line_at(self, offset: int) -> bytes:
        end = self._end_of_line(offset)
        return b"" if end is None else bytes(self._mm[offset: end]).rstrip(b"\r")

    def _scan(self, want: bytes) -> list[int]:
        """Offsets of the lines of `want`, found by searching the map (no index needed)."""
        mm, size = self._mm, self._size
        found = [0] if mm[: len(want) + 1] == want + b"=" else []
        needle = b"\n" + want + b"="
        begin = 0
        while begin < size:
            end = min(size, begin + _BLOCK)
            at = mm.find(needle, begin, min(size, end + len(needle) - 1))
            while at >= 0:
                found.append(at + 1)
                at = mm.find(needle, at + 1, min(size, end + len(needle) - 1))
            _drop_pages(mm, begin, end)
            begin = end
        return sorted(set(found))

    def lines(self, key: str) -> Iterator[tuple[int, str]]:
        """(offset, line) of every line of `key`, in file order (lines of one hash are sorted by
        line in the index). `line_number(offset)` gives the line's number."""
        want = key.encode()
        if not want or b"=" in want or b"\n" in want or want.startswith(b"#"):
            return  # no data line has such a key
        if not self._ready:
            if not self._build_wanted or (self._builder is None and not self._lock.locked()):
                # The first lookup of a process that found no kept index: answered by one
                # search of the map, then the index is built while the caller goes on.
                with self._lock:
                    found = self._scan(want)
                    if not self._ready and self._builder is None and self._build_wanted:
                        self._start_builder()
                for offset in found:
                    if self._end_of_line(offset) is not None:
                        yield offset, self._decode(self._line_at(offset), offset)
                return
            self.wait()
        hashes, offsets, mm = self._hashes, self._offsets, self._mm
        h = zlib.crc32(want)
        i = bisect.bisect_left(hashes, h)
        n = len(hashes)
        prefix = want + b"="
        while i < n and hashes[i] == h:
            offset = offsets[i]
            i += 1
            if mm[offset: offset + len(prefix)] != prefix:
                continue
            nl = self._end_of_line(offset)
            if nl is None:
                continue
            raw = mm[offset: nl]
            if raw.startswith(prefix):
                yield offset, self._decode(raw.rstrip(b"\r"), offset)

    def _decode(self, raw: bytes, offset: int) -> str:
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            raise DbError(f"{self.path}:{self.line_number(offset)} is not UTF-8 text; check "
                          "that the right file was given") from None

    def line_number(self, offset: int) -> int:
        """The 1-based number of the line starting at `offset` (for messages)."""
        self.wait()
        raw = self._line_at(offset)
        want = raw.partition(b"=")[0]
        h = zlib.crc32(want)
        i = bisect.bisect_left(self._hashes, h)
        while i < len(self._hashes) and self._hashes[i] == h:
            if self._offsets[i] == offset:
                return int(self._numbers[i])
            i += 1
        return 0

    def first(self, key: str) -> tuple[int, str] | None:
        """The first line of `key` (the one MIOpen's lookup returns) as (offset, line), or
        None."""
        return next(self.lines(key), None)

    def close(self) -> None:
        builder = self._builder
        if builder is not None:
            builder.join()  # it works on its own map; waiting keeps its index write whole
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
