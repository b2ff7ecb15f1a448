"""MIOpen's FindDb problem keys read back into problems (`ConvProblem.from_key`): every field
checked (digits within int32, 2-D or 3-D by the filter field, one or three layouts and types),
and the output size the key names checked against the one the shape gives."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from ._lazy_re import lazy
from ._numbers import INT32, parse_int
from .errors import ProblemError

__all__ = ["DATA_TYPES", "DIRECTIONS", "looks_like_key", "parse_key"]

DIRECTIONS = ("F", "B", "W")
# Every data type name MIOpen writes into a key (problem.COMPUTE_TYPES have kernels here).
DATA_TYPES = ("FP32", "FP16", "BF16", "INT8", "INT32", "FP64", "FP8", "BF8", "INT64")
_TYPE_RE = lazy("|".join(sorted(DATA_TYPES, key=len, reverse=True)))


def looks_like_key(text: str) -> bool:
    """Whether `text` reads as a problem key rather than a driver line."""
    return " " not in text and bool(re.match(r"^\d+-\d+-", text))


def _split_types(text: str) -> tuple[str, str, str]:
    names = _TYPE_RE.findall(text)
    if "".join(names) != text or len(names) not in (1, 3):
        raise ProblemError(f"data type field {text!r} is not a MIOpen type or in/wei/out triple")
    if len(names) == 1:
        return names[0], names[0], names[0]
    return names[0], names[1], names[2]


def _num(text: str, what: str) -> int:
    """One numeric field of a problem key: ASCII digits within int32."""
    return parse_int(text, f"problem key field {what}", 0, INT32[1], ProblemError)


def _nums(texts: list[str], names: str) -> tuple[int, ...]:
    return tuple(_num(v, name) for v, name in zip(texts, names.split(), strict=True))


def _ints(text: str, dims: int, what: str) -> tuple[int, ...]:
    parts = text.split("x")
    if len(parts) != dims:
        raise ProblemError(f"{what} field {text[:40]!r} is not {dims} integers joined by 'x'")
    return tuple(_num(p, what) for p in parts)


def parse_key(key: str, make: Callable[..., Any]) -> Any:
    """A FindDb key's problem, made by `make` (`ConvProblem`: its `from_key`)."""
    text = key.strip()
    groups = 1
    m = re.search(r"_g([0-9]+)$", text)
    if m:
        groups = parse_int(m.group(1), "problem key group count", 1, INT32[1], ProblemError)
        text = text[: m.start()]
    fields = text.split("-")
    # 2D: C H W f K oH oW N p s d bias LAYOUT(1 or 3) TYPE DIR -> 15 or 17 fields
    # 3D: C D H W f K oD oH oW N p s d bias LAYOUT TYPE DIR   -> 17 or 19 fields
    if len(fields) < 15 or not (fields[0].isascii() and fields[0].isdigit()):
        raise ProblemError(f"not a MIOpen problem key: {key[:80]!r}")
    # The filter field (with 'x') tells 2D from 3D.
    dims = fields[3].count("x") + 1 if "x" in fields[3] else fields[4].count("x") + 1
    n_num = 12 if dims == 2 else 14  # numeric fields before the layout (bias included)
    nums = fields[:n_num]
    try:
        if dims == 2:
            c, h, w = _nums(nums[0:3], "C H W")
            filt = _ints(nums[3], 2, "filter")
            k, oh, ow, n = _nums(nums[4:8], "K oH oW N")
            kin: tuple[int, ...] = (h, w)
            kout: tuple[int, ...] = (oh, ow)
            pad, stride, dil = (_ints(nums[i], 2, name) for i, name in
                                ((8, "padding"), (9, "stride"), (10, "dilation")))
            bias = _num(nums[11], "bias")
        elif dims == 3:
            c, d, h, w = _nums(nums[0:4], "C D H W")
            filt = _ints(nums[4], 3, "filter")
            k, od, oh, ow, n = _nums(nums[5:10], "K oD oH oW N")
            kin, kout = (d, h, w), (od, oh, ow)
            pad, stride, dil = (_ints(nums[i], 3, name) for i, name in
                                ((10, "padding"), (11, "stride"), (12, "dilation")))
            bias = _num(nums[13], "bias")
        else:
            raise ProblemError(f"not a MIOpen problem key (filter field): {key!r}")
    except (ValueError, IndexError) as exc:
        raise ProblemError(f"not a MIOpen problem key: {key[:80]!r} ({exc})") from None
    rest = fields[n_num:]
    if len(rest) not in (3, 5):
        raise ProblemError(f"not a MIOpen problem key (layout/type/direction): {key!r}")
    direction = rest[-1]
    if direction not in DIRECTIONS:
        raise ProblemError(f"key direction {direction!r} is not F, B or W in {key!r}")
    layouts = rest[:-2] if len(rest) == 5 else [rest[0]] * 3
    ti, tw, to = _split_types(rest[-2])
    if direction == "F":
        prob = make(
            n=n, c=c, k=k, in_spatial=kin, filter=filt, pad=pad, stride=stride, dilation=dil,
            groups=groups, direction="F", in_layout=layouts[0], wei_layout=layouts[1],
            out_layout=layouts[2], in_type=ti, wei_type=tw, out_type=to, bias=bias,
        )
        expected = kout
    else:
        prob = make(
            n=n, c=k, k=c, in_spatial=kout, filter=filt, pad=pad, stride=stride, dilation=dil,
            groups=groups, direction=direction, in_layout=layouts[2], wei_layout=layouts[1],
            out_layout=layouts[0], in_type=to, wei_type=tw, out_type=ti, bias=bias,
        )
        expected = kin
    if prob.out_spatial != expected:
        raise ProblemError(
            f"key {key!r} is inconsistent: output size {expected} but the shape gives "
            f"{prob.out_spatial}"
        )
    return prob
