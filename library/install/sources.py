"""What an index offers: kernel packages listed by a PEP 503 simple index, a find-links folder
or a conda channel's repodata.json. Local paths and file:// / http(s):// URLs."""

from __future__ import annotations

import functools
import hashlib
import html
import json
import os
import re
import stat
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from packaging.utils import InvalidWheelFilename, parse_wheel_filename
from packaging.version import InvalidVersion

from ..errors import IndexUnreachableError, TargetError
from ..target import Target
from ..versions import version_key

__all__ = ["Available", "Source", "list_available", "read_url", "open_regular", "MAX_PACKAGE_BYTES",
           "MAX_INDEX_BYTES", "MAX_INDEX_ENTRIES"]


@dataclass(frozen=True)
class Source:
    """Where packages come from: kind is 'index' (PEP 503), 'find-links' or 'channel'."""

    kind: str
    location: str

    @property
    def method(self) -> str:
        return "conda" if self.kind == "channel" else "pip"

    def __str__(self) -> str:
        return f"{self.kind} {self.location}"


@dataclass(frozen=True)
class Available:
    """One package file an index offers."""

    target: Target
    version: str
    url: str
    sha256: str | None
    kind: str  # 'wheel' | 'conda'
    build: str = ""  # conda build string, or wheel build tag ('' for none)

    @property
    def package(self) -> str:
        return self.target.package

    @property
    def databases_only(self) -> bool:
        """The package has no KernelDb (its build string or build tag says so)."""
        from .manifest import is_databases_only

        return is_databases_only(self.build)

    @property
    def contents(self) -> str:
        return "databases-only" if self.databases_only else "kernels"

    def to_dict(self) -> dict[str, Any]:
        return {"package": self.package, "target": self.target.name, "version": self.version,
                "kind": self.kind, "build": self.build, "contents": self.contents,
                "url": self.url, "sha256": self.sha256}


def _as_url(location: str) -> str:
    if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*://", location):
        return location
    return Path(location).resolve().as_uri()


# An index page or repodata.json of a kernel channel is a few MiB at most, with at most a few
# thousand entries; a package file (wheel) a few hundred MiB. Anything bigger is not what it
# claims to be, and is not read whole.
MAX_INDEX_BYTES = 16 << 20
MAX_INDEX_ENTRIES = 200_000  # a mirror's root page may list many projects
MAX_PACKAGE_BYTES = 4 << 30


def open_regular(path: Path, what: str) -> BinaryIO:
    """`path` opened for reading if it is a regular file (links followed); a FIFO, a device
    or a socket is refused at once (IndexUnreachableError) instead of read forever."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # a FIFO does not block the open
    except OSError as exc:
        raise IndexUnreachableError(f"{what} {path} cannot be read: {exc.strerror or exc}") \
            from None
    try:
        mode = os.fstat(fd).st_mode
    except OSError as exc:
        os.close(fd)
        raise IndexUnreachableError(f"{what} {path} cannot be read: {exc.strerror}") from None
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise IndexUnreachableError(f"{what} {path} is not a regular file (a FIFO, device or "
                                    "socket); give the file itself")
    os.set_blocking(fd, True)
    return os.fdopen(fd, "rb")


def read_url(url: str, what: str, timeout: float = 30, limit: int = MAX_INDEX_BYTES) -> bytes:
    """GET a URL (file:// folders read their index.html); unreachable -> IndexUnreachableError.

    More than `limit` bytes is an IndexUnreachableError too: the source is not an index.
    A local file must be a regular file.
    """
    parsed = urllib.parse.urlparse(url)
    if parsed.scheme == "file":
        path = Path(urllib.request.url2pathname(parsed.path))
        if path.is_dir():
            path = path / "index.html"
        with open_regular(path, what) as fh:
            try:
                data = fh.read(limit + 1)
            except OSError as exc:
                raise IndexUnreachableError(f"{what} {url} cannot be read: {exc.strerror}") \
                    from None
    else:
        try:
            with urllib.request.urlopen(url, timeout=timeout) as resp:  # noqa: S310 - user's
                data = bytes(resp.read(limit + 1))
        except (urllib.error.URLError, OSError, ValueError) as exc:
            reason = getattr(exc, "reason", exc)
            raise IndexUnreachableError(f"{what} {url} is unreachable: {reason}") from None
    if len(data) > limit:
        raise IndexUnreachableError(f"{what} {url} is over {limit >> 20} MiB, so not a {what}; "
                                    "check the URL")
    return data


# `<a attrs>text` of a PEP 503 page. Neither part may hold `<`, so every character is
# scanned by one match at most: linear in the page, whatever it holds (html.parser is not, on
# crafted input).
_ANCHOR = re.compile(r"<a\s([^<>]*)>([^<]*)", re.IGNORECASE)
_HREF = re.compile(r"""\bhref\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'>]+))""", re.IGNORECASE)


def _links(page: bytes, where: str = "package index page") -> list[tuple[str, str]]:
    """(href, text) of every link of an index page; more than MAX_INDEX_ENTRIES is not an
    index of kernel packages (IndexUnreachableError)."""
    links = []
    for m in _ANCHOR.finditer(page.decode("utf-8", errors="replace")):
        href = _HREF.search(m.group(1))
        if href is None:
            continue
        links.append((html.unescape(next(g for g in href.groups() if g is not None)),
                      html.unescape(m.group(2)).strip()))
        if len(links) > MAX_INDEX_ENTRIES:
            raise IndexUnreachableError(f"{where} lists over {MAX_INDEX_ENTRIES} links, so it "
                                        "is not an index of kernel packages; check the URL")
    return links


@functools.lru_cache(maxsize=4096)  # a page names few packages, however many links it has
def _target(package: str) -> Target | None:
    try:
        return Target.from_package(package)
    except TargetError:
        return None


def _from_wheel_link(base: str, href: str) -> Available | None:
    url, _, fragment = urllib.parse.urljoin(base, href).partition("#")
    name = urllib.parse.unquote(url.rsplit("/", 1)[-1])
    try:
        dist, version, build, _tags = parse_wheel_filename(name)
    except (InvalidWheelFilename, InvalidVersion):
        return None
    target = _target(dist)
    if target is None:
        return None
    sha = fragment[len("sha256="):] if fragment.startswith("sha256=") else None
    return Available(target, str(version), url, sha, "wheel", "".join(map(str, build)))


def _list_index(index_url: str) -> list[Available]:
    base = index_url.rstrip("/") + "/"
    found = []
    pages: dict[str, None] = {}  # each project page read once, however often it is linked
    for href, text in dict.fromkeys(_links(read_url(base, "package index"), base)):
        name = text or href.strip("/")
        if _target(name.strip("/")) is None:
            continue
        # A plain relative link (what PEP 503 pages hold) joins without urljoin's cost.
        plain = ":" not in href and not href.startswith(("/", ".", "?", "#"))
        page_url = base + href if plain else urllib.parse.urljoin(base, href)
        pages[page_url if page_url.endswith("/") else page_url + "/"] = None
    for page_url in pages:
        for whref, _ in _links(read_url(page_url, "package index page"), page_url):
            a = _from_wheel_link(page_url, whref)
            if a:
                found.append(a)
    return found


def _list_find_links(location: str) -> list[Available]:
    url = _as_url(location)
    parsed = urllib.parse.urlparse(url)
    if parsed.scheme == "file":
        folder = Path(urllib.request.url2pathname(parsed.path))
        if not folder.is_dir():
            raise IndexUnreachableError(f"find-links folder {folder} does not exist")
        found: list[Available] = []
        for whl in sorted(folder.glob("*.whl")):
            a = _from_wheel_link(url.rstrip("/") + "/", whl.name)
            if a:
                with open_regular(whl, "wheel") as fh:
                    h = hashlib.sha256()
                    for chunk in iter(lambda: fh.read(1 << 20), b""):
                        h.update(chunk)
                digest = h.hexdigest()
                found.append(Available(a.target, a.version, a.url, digest, "wheel", a.build))
        return found
    page = url if url.endswith("/") else url + "/"
    return [a for href, _ in _links(read_url(page, "find-links page"), page)
            if (a := _from_wheel_link(page, href))]


def _list_channel(channel: str) -> list[Available]:
    base = _as_url(channel).rstrip("/") + "/"
    raw = read_url(base + "noarch/repodata.json", "conda channel")
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        raise IndexUnreachableError(f"conda channel {channel}: noarch/repodata.json is not "
                                    f"JSON ({exc}); re-index the channel") from None
    if not isinstance(data, dict) or not all(
            isinstance(data.get(s) or {}, dict) for s in ("packages", "packages.conda")):
        raise IndexUnreachableError(f"conda channel {channel}: noarch/repodata.json is not a "
                                    "conda repodata object; re-index the channel")
    entries = sum(len(data.get(s) or {}) for s in ("packages", "packages.conda"))
    if entries > MAX_INDEX_ENTRIES:
        raise IndexUnreachableError(f"conda channel {channel}: noarch/repodata.json lists "
                                    f"{entries} packages, over {MAX_INDEX_ENTRIES}: not a "
                                    "channel of kernel packages")
    found = []
    for section in ("packages", "packages.conda"):
        for fname, rec in (data.get(section) or {}).items():
            if not isinstance(rec, dict) or not isinstance(rec.get("name", ""), str):
                continue  # not a package record: nothing to offer from it
            target = _target(str(rec.get("name", "")))
            if target is None:
                continue
            found.append(Available(target, str(rec.get("version")), base + "noarch/" + fname,
                                   rec.get("sha256"), "conda", str(rec.get("build", ""))))
    return found


def list_available(source: Source) -> list[Available]:
    """Every kernel package `source` offers (all versions), sorted by target then version."""
    if source.kind == "index":
        found = _list_index(_as_url(source.location))
    elif source.kind == "find-links":
        found = _list_find_links(source.location)
    elif source.kind == "channel":
        found = _list_channel(source.location)
    else:  # pragma: no cover - the CLI only makes the three kinds
        raise ValueError(source.kind)
    return sorted(found, key=lambda a: (a.target.arch, a.target.cu, version_key(a.version)))
