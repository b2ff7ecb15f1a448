"""Regular expressions compiled on first use.

A module on the runtime's start-up path that compiles its patterns at import pays for all of them
before the first call (bench/startup.py: about 18 patterns, 2-3 ms, most never used by a first
call). `lazy(pattern, flags)` stands for `re.compile(pattern, flags)` and compiles on the first
match.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, overload

if TYPE_CHECKING:
    import re


class LazyPattern:
    """The subset of `re.Pattern` the library uses, compiled when first asked."""

    __slots__ = ("_source", "_flags", "_compiled")

    def __init__(self, pattern: str | bytes, flags: int = 0) -> None:
        self._source = pattern
        self._flags = flags
        self._compiled: Any = None

    def _get(self) -> Any:
        compiled = self._compiled
        if compiled is None:
            import re

            compiled = self._compiled = re.compile(self._source, self._flags)
        return compiled

    @property
    def pattern(self) -> str | bytes:
        return self._source

    def match(self, string: Any, *args: int) -> Any:
        return self._get().match(string, *args)

    def fullmatch(self, string: Any, *args: int) -> Any:
        return self._get().fullmatch(string, *args)

    def search(self, string: Any, *args: int) -> Any:
        return self._get().search(string, *args)

    def findall(self, string: Any, *args: int) -> Any:
        return self._get().findall(string, *args)

    def finditer(self, string: Any, *args: int) -> Any:
        return self._get().finditer(string, *args)

    def sub(self, repl: Any, string: Any, count: int = 0) -> Any:
        return self._get().sub(repl, string, count)


@overload
def lazy(pattern: str, flags: int = 0) -> re.Pattern[str]: ...


@overload
def lazy(pattern: bytes, flags: int = 0) -> re.Pattern[bytes]: ...


def lazy(pattern: str | bytes, flags: int = 0) -> Any:
    """`re.compile(pattern, flags)`, deferred to the first use (typed as the compiled pattern:
    callers use match, fullmatch, search, findall, finditer, sub and pattern)."""
    return LazyPattern(pattern, flags)
