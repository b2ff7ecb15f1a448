"""Package versions, read and ordered by PEP 440 (`packaging`): the installer's "newest", a
requested `--version`, and the version the packager writes into wheels, conda packages and
manifests all go through here."""

from __future__ import annotations

from packaging.version import InvalidVersion, Version

from .errors import MIOpenKernelsError

__all__ = ["normalize_version", "same_version", "version_key"]


def _parse(text: str) -> Version | None:
    try:
        return Version(str(text))
    except InvalidVersion:
        return None


def version_key(text: str) -> tuple[int, Version | str]:
    """Sort key: PEP 440 order (0.2.0rc1 < 0.2.0rc2 < 0.2.0); a version that is not PEP 440
    sorts below every one that is, by its text."""
    v = _parse(text)
    return (1, v) if v is not None else (0, str(text))


def same_version(a: str, b: str) -> bool:
    """`0.1` and `0.1.0` are the same version; texts that are not PEP 440 compare as text."""
    va, vb = _parse(a), _parse(b)
    return va == vb if va is not None and vb is not None else str(a) == str(b)


def normalize_version(text: str, error: type[MIOpenKernelsError] = MIOpenKernelsError) -> str:
    """The canonical spelling of a package version (`0.2.0-rc1` -> `0.2.0rc1`), which is what
    wheel and conda file names carry; `error` when it is not a PEP 440 version."""
    v = _parse(text)
    if v is None:
        raise error(f"version {text!r} is not a PEP 440 version such as 0.2.0 or 0.2.0rc1")
    return str(v)
