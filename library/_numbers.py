"""Integers read from outside (files, environment, command lines, database keys).

One boundary: ASCII digits only (a sign only where the caller allows it), a bounded length, a
caller-given range, and the caller's error class with one line naming the field and the range.
`str.isdigit()` accepts '²' and '౭', and `int()` raises past 4,300 digits; neither gets here.
"""

from __future__ import annotations

from .errors import MIOpenKernelsError

__all__ = ["parse_int", "INT32", "INT64"]

INT32 = (-(2**31), 2**31 - 1)
INT64 = (-(2**63), 2**63 - 1)
_MAX_DIGITS = 40  # beyond any range the project reads (int64 is 19 digits)


def _show(text: str) -> str:
    return repr(text if len(text) <= 40 else text[:20] + "..." + text[-8:]) + (
        f" ({len(text)} characters)" if len(text) > 40 else "")


def parse_int(text: str, field: str, lo: int, hi: int, error: type[MIOpenKernelsError],
              *, signed: bool = False) -> int:
    """`text` as an integer in lo..hi, or `error` naming `field` and the range."""
    s = text.strip()
    body = s[1:] if signed and s[:1] in ("+", "-") else s
    if not body or not (body.isascii() and body.isdigit()):
        sign = "an optional sign and " if signed else ""
        raise error(f"{field} must be an integer ({sign}ASCII digits) in {lo}..{hi}, "
                    f"got {_show(text)}")
    if len(body.lstrip("0")) > _MAX_DIGITS or not lo <= int(s) <= hi:
        raise error(f"{field} must be in {lo}..{hi}, got {_show(text)}")
    return int(s)
