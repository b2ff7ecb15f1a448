"""A conda package archive, checked as it inflates, before py-rattler extracts anything.

A `.tar.bz2` is one bzip2 tar; a `.conda` is a zip of `metadata.json`, `info-<dist>.tar.zst`
and `pkg-<dist>.tar.zst`. Each tar is inflated as a stream and walked header by header, its
data skipped in chunks, never held: the inflated bytes of a package are bounded (a ceiling,
and a ratio to the compressed size beyond a first allowance, so a bomb of a few KiB that would
inflate to GiBs stops within a second), and so are its members, each name and link. A member
must be a file, a folder or a link that stays in the prefix (no device, FIFO or sparse file), at
a path inside the prefix; a kernel package's files must be ones its kind may hold
(`contain.allowed`) and its metadata under `info/`. Bad archives are IntegrityError (exit 12),
paths a kernel package may not hold ContainmentError (exit 12 too).
"""

from __future__ import annotations

import posixpath
import tarfile
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from ..errors import ContainmentError, InstallError, IntegrityError, TargetError
from ..target import Target
from .manifest import MANIFEST_DIR, MAX_MANIFEST_BYTES, check_relpath
from .sources import MAX_PACKAGE_BYTES

__all__ = ["check_conda_archive", "MAX_MEMBERS"]

MAX_MEMBERS = 4096  # a kernel package holds a handful of files and its info/ metadata
# Inflated bytes free of the ratio check, then at most this many per compressed byte: kdbs
# hold bzip2 blobs (about 1:1), text databases inflate some ten times.
_FREE_BYTES = 64 << 20
_MAX_RATIO = 64
_MAX_HEADER_BYTES = 1 << 20  # a pax or GNU long-name header: one path, a few fields
_CHUNK = 1 << 20
_FILES = (tarfile.REGTYPE, tarfile.AREGTYPE)
_LINKS = (tarfile.SYMTYPE, tarfile.LNKTYPE)


def check_conda_archive(path: Path, package: str) -> None:
    """Refuse the conda archive at `path` of `package` (its name) if any member is over a
    limit, not a file, folder or link inside the prefix, or (a kernel package) not one its
    kind may hold; nothing is extracted."""
    try:
        target: Target | None = Target.from_package(package)
    except TargetError:
        target = None  # another package of the solve (the selector): no kind to hold to
    check = _Check(path.name, target, path.stat().st_size)
    try:
        if path.name.endswith(".tar.bz2"):
            import bz2

            with bz2.open(path, "rb") as stream:
                check.walk(stream, None)
        elif path.name.endswith(".conda"):
            _check_conda_zip(path, check)
    except (OSError, EOFError, ValueError, zipfile.BadZipFile) as exc:
        raise IntegrityError(f"conda package {path.name} is not a valid archive: {exc}; "
                             "nothing was installed") from None


def _check_conda_zip(path: Path, check: _Check) -> None:
    try:
        import zstandard
    except ImportError:
        raise InstallError("zstandard is needed to check .conda packages before they are "
                           "installed (pip install zstandard)") from None
    with zipfile.ZipFile(path) as archive:
        infos = archive.infolist()
        names = [i.filename for i in infos]
        stem = path.name[: -len(".conda")]
        expected = {"metadata.json", f"info-{stem}.tar.zst", f"pkg-{stem}.tar.zst"}
        if len(infos) != len(set(names)) or not set(names) <= expected:
            extra = sorted(set(names) - expected) or ["a member twice"]
            raise IntegrityError(f"conda package {path.name} holds {check.shown(extra[0])}, "
                                 "not a .conda member; nothing was installed")
        for info in infos:
            if not info.filename.endswith(".tar.zst"):
                continue
            section = "info" if info.filename.startswith("info-") else "pkg"
            with archive.open(info) as raw, \
                    zstandard.ZstdDecompressor().stream_reader(raw) as stream:
                check.walk(stream, section)


class _Check:
    """The budget of one archive and the rules its members are held to."""

    def __init__(self, name: str, target: Target | None, packed: int) -> None:
        self.name, self.target = name, target
        self.ceiling = min(MAX_PACKAGE_BYTES, _FREE_BYTES + _MAX_RATIO * packed)
        self.inflated = 0
        self.members = 0

    def shown(self, text: str) -> str:
        from .contain import shown

        return repr(shown(text)[:200])

    def refuse(self, what: str) -> IntegrityError:
        return IntegrityError(f"conda package {self.name}: {what}; the package is not to be "
                              "trusted: nothing was installed")

    def read(self, stream: IO[bytes], size: int) -> bytes:
        """`size` inflated bytes (fewer at the end), counted against the ceiling first."""
        if self.inflated + size > self.ceiling:
            raise self.refuse(f"inflates past {self.ceiling >> 20} MiB (a compression bomb, "
                              "or far more than a kernel package holds)")
        parts, got = [], 0
        while got < size:  # a decompressor may return fewer bytes than asked before the end
            part = stream.read(size - got)
            if not part:
                break
            parts.append(part)
            got += len(part)
        self.inflated += got
        return b"".join(parts)

    def skip(self, stream: IO[bytes], size: int) -> None:
        while size > 0:
            got = len(self.read(stream, min(size, _CHUNK)))
            if not got:
                raise EOFError("the archive ends inside a member")
            size -= got

    def walk(self, stream: IO[bytes], section: str | None) -> None:
        for member in _members(self, stream):
            self.members += 1
            if self.members > MAX_MEMBERS:
                raise self.refuse(f"holds over {MAX_MEMBERS} members")
            self.member(member, section)
        # After the end-of-archive blocks: padding only, not a stream that goes on inflating.
        self.skip_rest(stream)

    def skip_rest(self, stream: IO[bytes]) -> None:
        rest = 0
        while chunk := self.read(stream, _CHUNK):
            rest += len(chunk)
            if rest > _CHUNK or chunk.count(0) != len(chunk):
                raise self.refuse("goes on after the end of its archive")

    def member(self, m: tarfile.TarInfo, section: str | None) -> None:
        name = m.name.removeprefix("./").rstrip("/") if m.isdir() else m.name.removeprefix("./")
        rel = check_relpath(name, f"conda package {self.name}")
        if m.type not in (*_FILES, tarfile.DIRTYPE, *_LINKS):
            raise self.refuse(f"{self.shown(rel)} is not a file, folder or link (a device, "
                              "FIFO or sparse member)")
        if m.type in _LINKS:
            self.link(rel, m)
        in_info = rel == "info" or rel.startswith("info/")
        if section is not None and in_info != (section == "info"):
            raise self.refuse(f"{self.shown(rel)} is in the {section} archive")
        if (rel.startswith(MANIFEST_DIR + "/") and rel.endswith(".manifest.json")
                and m.size > MAX_MANIFEST_BYTES):
            raise self.refuse(f"{self.shown(rel)} is {m.size >> 20} MiB, over the limit of a "
                              f"manifest ({MAX_MANIFEST_BYTES >> 20} MiB)")
        if m.size > self.ceiling - self.inflated:
            raise self.refuse(f"{self.shown(rel)} is {m.size >> 20} MiB, over the limit of "
                              f"what this package may inflate to ({self.ceiling >> 20} MiB)")
        if self.target is not None and not in_info and not m.isdir():
            from .contain import allowed

            if not allowed(rel, self.target):
                raise ContainmentError(
                    f"conda package {self.name} holds {self.shown(rel)}, which a kernel "
                    f"package of {self.target.name} may not write (only its databases, "
                    "manifest and packaging metadata): nothing was installed")

    def link(self, rel: str, m: tarfile.TarInfo) -> None:
        # A symlink's target is relative to its folder, a hard link's to the archive's root.
        start = posixpath.dirname(rel) if m.type == tarfile.SYMTYPE else ""
        target = posixpath.normpath(posixpath.join(start, m.linkname))
        if (not m.linkname or m.linkname.startswith("/") or target == ".."
                or target.startswith("../")):
            raise self.refuse(f"{self.shown(rel)} links to {self.shown(m.linkname)}, out of "
                              "the prefix")


def _members(check: _Check, stream: IO[bytes]) -> Iterator[tarfile.TarInfo]:
    """The members of a tar stream, each header parsed and checked (tarfile's own parser),
    pax and GNU long names applied, the data skipped: never more than one header held."""
    pending: dict[str, Any] = {}
    while True:
        block = check.read(stream, tarfile.BLOCKSIZE)
        if len(block) < tarfile.BLOCKSIZE:
            raise EOFError("the archive ends inside a header")
        if block == bytes(tarfile.BLOCKSIZE):
            return
        try:
            info = tarfile.TarInfo.frombuf(block, "utf-8", "surrogateescape")
        except tarfile.HeaderError as exc:
            raise check.refuse(f"has a damaged tar header ({exc})") from None
        padded = -(-info.size // tarfile.BLOCKSIZE) * tarfile.BLOCKSIZE
        if info.type in (tarfile.XHDTYPE, tarfile.GNUTYPE_LONGNAME, tarfile.GNUTYPE_LONGLINK):
            if info.size > _MAX_HEADER_BYTES:
                raise check.refuse(f"has a {info.size >> 20} MiB extended header")
            data = check.read(stream, padded)[: info.size]
            if info.type == tarfile.XHDTYPE:
                pending.update(_pax(check, data))
            else:
                key = "path" if info.type == tarfile.GNUTYPE_LONGNAME else "linkpath"
                end = data.find(0)
                pending[key] = data[:end if end >= 0 else len(data)].decode("utf-8",
                                                                             "surrogateescape")
            continue
        if info.type == tarfile.XGLTYPE:
            raise check.refuse("has a global pax header")
        if "path" in pending:
            info.name = pending["path"]
        if "linkpath" in pending:
            info.linkname = pending["linkpath"]
        if "size" in pending:
            info.size = pending["size"]
            padded = -(-info.size // tarfile.BLOCKSIZE) * tarfile.BLOCKSIZE
        pending = {}
        if info.size and info.type not in _FILES:  # a reader might not skip its data
            raise check.refuse(f"has a member {check.shown(info.name)} of {info.size} bytes "
                               "that is not a file")
        yield info
        check.skip(stream, padded)


def _record(check: _Check, raw: bytes) -> str:
    return check.shown(raw.decode("utf-8", "backslashreplace"))


# The separators as byte values: a one-byte bytes literal is a process-wide shared object, so a
# native extension that ever wrote into one would change what it compares equal to.
_SPACE, _EQUALS, _NEWLINE = 0x20, 0x3D, 0x0A


def _pax(check: _Check, data: bytes) -> dict[str, Any]:
    """The records `<length> <key>=<value>\\n` of a pax header: path, linkpath and size."""
    out: dict[str, Any] = {}
    pos = 0
    while pos < len(data) and data[pos] != 0:
        space = data.find(_SPACE, pos, pos + 20)
        length_text = data[pos:space]
        if space < 0 or not length_text.isdigit() or int(length_text) < 5:
            raise check.refuse(f"has a malformed pax header record at byte {pos} of "
                               f"{len(data)}: {_record(check, data[pos:pos + 40])}")
        start, pos = pos, pos + int(length_text)
        record = data[start:pos]
        eq = record.find(_EQUALS, space - start + 1)
        if eq < 0 or len(record) < 2 or record[-1] != _NEWLINE:
            raise check.refuse(f"has a malformed pax header record at byte {start} "
                               f"of {len(data)}: {_record(check, record[:40])}")
        key, value = record[space - start + 1:eq], record[eq + 1:-1]
        if key in (b"path", b"linkpath"):
            out[key.decode()] = value.decode("utf-8", "surrogateescape")
        elif key == b"size":
            if not value.isdigit() or len(value) > 12:
                raise check.refuse("has a pax size that is not a number")
            out["size"] = int(value)
    return out
