"""MIOpenDriver command lines: the way people and MITuna write convolution problems.

`conv -n 32 -c 64 -H 56 -W 56 -k 64 -y 3 -x 3 -p 1 -q 1 -F 1` and its long-flag spelling
(`--batchsize 32 --in_channels 64 ...`). Flags that do not change the problem (timing, verification,
iteration counts, file names) are accepted and ignored. `-F 0/3/5/6` give several problems.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from functools import lru_cache
from itertools import compress
from operator import itemgetter
from typing import Any

from ._lazy_re import lazy
from ._numbers import INT32, parse_int
from .errors import ProblemError
from .pooling import PoolProblem
from .problem import ConvProblem, _looks_like_key, normal_layouts

__all__ = [
    "parse_driver_line",
    "parse_pool_line",
    "parse_any_line",
    "parse_driver_lines",
    "parse_problems",
    "SUBCOMMAND_TYPES",
    "to_driver_line",
]

# Sub-command -> data type of all three tensors.
SUBCOMMAND_TYPES = {
    "conv": "FP32",
    "convfp16": "FP16",
    "convbfp16": "BF16",
    "convint8": "INT8",
    "convfp8": "FP8",
    "convbfp8": "BF8",
    "convfp64": "FP64",
}


@dataclass(frozen=True)
class _Flag:
    long: str
    short: str
    default: str
    kind: str  # "int" | "str" | "ignored"


_FLAGS = [
    _Flag("spatial_dim", "_", "2", "int"),
    _Flag("forw", "F", "0", "int"),
    _Flag("batchsize", "n", "100", "int"),
    _Flag("in_channels", "c", "3", "int"),
    _Flag("in_d", "!", "32", "int"),
    _Flag("in_h", "H", "32", "int"),
    _Flag("in_w", "W", "32", "int"),
    _Flag("out_channels", "k", "32", "int"),
    _Flag("fil_d", "@", "3", "int"),
    _Flag("fil_h", "y", "3", "int"),
    _Flag("fil_w", "x", "3", "int"),
    _Flag("conv_stride_d", "#", "1", "int"),
    _Flag("conv_stride_h", "u", "1", "int"),
    _Flag("conv_stride_w", "v", "1", "int"),
    _Flag("pad_d", "$", "0", "int"),
    _Flag("pad_h", "p", "0", "int"),
    _Flag("pad_w", "q", "0", "int"),
    _Flag("trans_output_pad_d", "%", "0", "int"),
    _Flag("trans_output_pad_h", "Y", "0", "int"),
    _Flag("trans_output_pad_w", "X", "0", "int"),
    _Flag("dilation_d", "^", "1", "int"),
    _Flag("dilation_h", "l", "1", "int"),
    _Flag("dilation_w", "j", "1", "int"),
    _Flag("group_count", "g", "1", "int"),
    _Flag("mode", "m", "conv", "str"),
    _Flag("pad_mode", "z", "default", "str"),
    _Flag("bias", "b", "0", "int"),
    _Flag("in_layout", "I", "", "str"),
    _Flag("out_layout", "O", "", "str"),
    _Flag("fil_layout", "f", "", "str"),
    # Flags that do not change the problem.
    _Flag("pad_val", "r", "0", "ignored"),
    _Flag("iter", "i", "10", "ignored"),
    _Flag("verify", "V", "1", "ignored"),
    _Flag("time", "t", "0", "ignored"),
    _Flag("wall", "w", "0", "ignored"),
    _Flag("search", "s", "0", "ignored"),
    _Flag("printconv", "P", "1", "ignored"),
    _Flag("dump_output", "o", "0", "ignored"),
    _Flag("in_data", "d", "", "ignored"),
    _Flag("weights", "e", "", "ignored"),
    _Flag("dout_data", "D", "", "ignored"),
    _Flag("solution", "S", "-1", "ignored"),
    _Flag("in_bias", "a", "", "ignored"),
    _Flag("gpubuffer_check", "~", "0", "ignored"),
    _Flag("tensor_vect", "Z", "0", "ignored"),
    _Flag("vector_length", "L", "1", "ignored"),
    _Flag("in_cast_type", "U", "-1", "ignored"),
    _Flag("wei_cast_type", "R", "-1", "ignored"),
    _Flag("out_cast_type", "T", "-1", "ignored"),
    _Flag("dbshape", "B", "0", "ignored"),
]
_DIRECTIONS_OF_F = {0: "FBW", 1: "F", 2: "B", 3: "FB", 4: "W", 5: "FW", 6: "BW"}
_LAYOUT_3D = {"NCHW": "NCDHW", "NHWC": "NDHWC"}


# Quotes and escapes need shlex (which splits at spaces, tabs, CR and LF alone).
_SHELL_QUOTES = ("'", '"', "\\")


def _tokens(line: str) -> list[str]:
    text = line.strip()
    # MITuna's logs prefix the API call: "miopenConvolutionForward: ./bin/MIOpenDriver conv ..."
    if ":" in text and ":" in text.split(None, 1)[0]:
        text = text.split(":", 1)[1].strip()
    plain = text.replace("\t", " ") if "\t" in text else text
    if (plain.isascii() and plain.isprintable()
            and not any(quote in plain for quote in _SHELL_QUOTES)):
        # Printable ASCII without quotes: shlex would split at spaces alone, ten times slower.
        tokens = plain.split()
    else:
        try:
            tokens = shlex.split(text)
        except ValueError as exc:
            raise ProblemError(f"cannot split the command line: {exc}") from None
    if tokens and tokens[0].endswith("MIOpenDriver"):
        tokens = tokens[1:]
    return tokens


# Ignored flags MIOpenDriver still reads as integers, and the ranges it accepts.
_INT_IGNORED = {"iter", "verify", "time", "wall", "search", "printconv", "dump_output",
                "solution", "gpubuffer_check", "tensor_vect", "vector_length", "in_cast_type",
                "wei_cast_type", "out_cast_type", "dbshape", "wsidx"}
_RANGES = {"tensor_vect": (0, 2)}  # none, vect_c, vect_n


class _FlagTable:
    """A sub-command's flags by long name, by short name and by the token that names one
    (`--batchsize`, `-n`), with their defaults (integers as such), built once."""

    def __init__(self, flags: list[_Flag]) -> None:
        self.by_long = {f.long: f for f in flags}
        self.by_short = {f.short: f for f in flags}
        self.by_token = {**{f"--{f.long}": f for f in flags}, **{f"-{f.short}": f for f in flags}}
        self.tokens = frozenset(self.by_token)
        self.long_of = {token: f.long for token, f in self.by_token.items()}
        # Flags whose values are integers: MIOpenDriver reads the ignored ones as such too.
        self.ints = frozenset(f.long for f in flags if f.kind == "int" or f.long in _INT_IGNORED)
        self.defaults: dict[str, str | int] = {
            f.long: int(f.default) if f.long in self.ints else f.default for f in flags}


_CONV_FLAGS = _FlagTable(_FLAGS)


# Integers in normal form (as `_int32` gives them) one space apart: nine digits at most.
_NORMAL_INTS = lazy(r"(?:0|[1-9][0-9]{0,8})(?: (?:0|[1-9][0-9]{0,8}))*")


def _read_flags(tokens: list[str], table: _FlagTable) -> dict[str, Any]:
    """The flags of a command line by long name: integers (within int32) or text."""
    values = _read_flag_pairs(tokens, table)
    return values if values is not None else _read_flags_one_by_one(tokens, table)


def _read_flag_pairs(tokens: list[str], table: _FlagTable) -> dict[str, Any] | None:
    """The flags of a usual line, a few operations for all of them (a manifest may hold many
    thousand lines): each token a flag's name, then its value, each flag once, integers in
    normal form and no range to check. None for any other line, which the flag loop reads
    (and names what is wrong with)."""
    names, given = tokens[0::2], tokens[1::2]
    if len(names) != len(given) or not table.tokens.issuperset(names):
        return None
    longs = list(map(table.long_of.__getitem__, names))
    values: dict[str, Any] = dict(zip(longs, given, strict=True))
    if len(values) != len(longs) or not _RANGES.keys().isdisjoint(values):
        return None
    is_int = list(map(table.ints.__contains__, longs))
    numbers = list(compress(given, is_int))
    found = list(map(_small_ints().get, numbers))
    if None in found:  # not all of them small, or not all in normal form
        joined = " ".join(numbers)
        if joined.count(" ") != len(numbers) - 1 or not _NORMAL_INTS.fullmatch(joined):
            return None
        found = list(map(int, numbers))
    values.update(zip(compress(longs, is_int), found, strict=True))
    return values


@lru_cache(maxsize=1)
def _small_ints() -> dict[str, int]:
    """The integers below 8192 by their normal form: the values of nearly every flag of a
    manifest, checked and read by one look-up each."""
    return {str(i): i for i in range(8192)}


def _read_flags_one_by_one(tokens: list[str], table: _FlagTable) -> dict[str, Any]:
    values: dict[str, Any] = {}
    ints = table.ints
    count = len(tokens)
    i = 0
    while i < count:
        tok = tokens[i]
        flag, text, used = _flag_with_value(tok, tokens, i, table)
        i += used
        long = flag.long
        val: str | int = text
        if long in ints:
            val = number = _int32(tok, text)
            if long in _RANGES:
                lo, hi = _RANGES[long]
                if not lo <= number <= hi:
                    raise ProblemError(f"flag {tok!r} must be {lo}..{hi}, got {number}")
        before = values.get(long)
        if before is not None and before != val:
            raise ProblemError(f"flag {tok!r} given twice with different values "
                               f"({str(before)!r} and {str(val)!r}; --{long}/-{flag.short})")
        values[long] = val
    return values


def _flag_with_value(tok: str, tokens: list[str], i: int,
                     table: _FlagTable) -> tuple[_Flag, str, int]:
    """The flag `tok` names, its value (`--name=value`, `-nVALUE`, or the next token) and the
    number of tokens they take."""
    if tok.startswith("--"):
        name, eq, val = tok[2:].partition("=")
        flag = table.by_long.get(name)
        if flag is None:
            raise ProblemError(f"unknown flag {tok!r}")
    elif tok.startswith("-") and len(tok) >= 2:
        name, val = tok[1], tok[2:]
        flag = table.by_short.get(name)
        if flag is None:
            raise ProblemError(f"unknown flag {tok!r}")
        eq = "=" if val else ""
    else:
        raise ProblemError(f"unexpected argument {tok!r} (expected a flag)")
    if eq:
        return flag, val, 1
    if i + 1 >= len(tokens):
        raise ProblemError(f"flag {tok!r} needs a value")
    return flag, tokens[i + 1], 2


def _int32(flag: str, text: str) -> int:
    """An MIOpenDriver integer: ASCII digits with an optional sign, within int32."""
    if len(text) < 10 and text.isdigit() and text.isascii():  # nine digits: within int32
        return int(text)
    return parse_int(text, f"flag {flag!r}", INT32[0], INT32[1], ProblemError, signed=True)


def _same_pads(size: int, fil: int, stride: int) -> int:
    rem = size % stride
    pad = max(fil - stride, 0) if rem == 0 else max(fil - rem, 0)
    return pad // 2


def parse_driver_line(line: str) -> list[ConvProblem]:
    """Parse one MIOpenDriver conv line into one problem per direction it asks for."""
    return _conv_problems(_tokens(line))


# The flags of each spatial axis of a 2D or 3D problem: input, filter, padding, stride,
# dilation, output padding.
_AXES = {dims: tuple(itemgetter(*(f"{what}_{a}" for a in axes))
                     for what in ("in", "fil", "pad", "conv_stride", "dilation",
                                  "trans_output_pad"))
         for dims, axes in ((2, "hw"), (3, "dhw"))}
_LAYOUT_FLAGS = itemgetter("in_layout", "fil_layout", "out_layout")


def _conv_problems(tokens: list[str]) -> list[ConvProblem]:
    if not tokens:
        raise ProblemError("empty command line (expected e.g. 'conv -n 32 -c 64 ...')")
    sub = tokens[0]
    if sub not in SUBCOMMAND_TYPES:
        raise ProblemError(
            f"unknown sub-command {sub!r}: expected one of {', '.join(SUBCOMMAND_TYPES)}"
        )
    v = {**_CONV_FLAGS.defaults, **_read_flags(tokens[1:], _CONV_FLAGS)}
    dims = v["spatial_dim"]
    # Depth flags without --spatial_dim 3 leave the problem 2D, as in MIOpenDriver (MITuna
    # writes --in_d 1 --fil_d 1 on 2D problems).
    if dims not in (2, 3):
        raise ProblemError(f"flag '--spatial_dim' must be 2 or 3, got {dims}")
    forw = v["forw"]
    if forw not in _DIRECTIONS_OF_F:
        raise ProblemError(f"flag '-F' must be one of 0..6, got {forw}")
    in_sp, fil, pad, stride, dil, top = [axes(v) for axes in _AXES[dims]]
    mode = v["mode"]
    if mode not in ("conv", "trans"):
        raise ProblemError(f"flag '-m' must be 'conv' or 'trans', got {mode!r}")
    pad_mode = v["pad_mode"]
    if pad_mode not in ("default", "same", "valid"):
        raise ProblemError(f"flag '-z' must be default, same or valid, got {pad_mode!r}")
    if pad_mode != "default" and mode == "conv" and (all(d == 1 for d in dil)
                                                     or all(f == 1 for f in fil)):
        if pad_mode == "same":
            pad = tuple(_same_pads(i, f, s) for i, f, s in zip(in_sp, fil, stride, strict=True))
        else:
            pad = (0,) * dims

    in_layout, fil_layout, out_layout = layouts = _LAYOUT_FLAGS(v)
    if any(layouts):  # given: in capitals, a 2D name stands for the 3D one of a 3D problem
        in_layout, fil_layout, out_layout = (
            _LAYOUT_3D.get(text.upper(), text.upper()) if dims == 3 else text.upper()
            for text in layouts)
    groups = v["group_count"]
    if groups < 1:
        raise ProblemError(f"flag '-g' (--group_count) must be at least 1, got {groups}")
    directions = _DIRECTIONS_OF_F[forw]
    dtype = SUBCOMMAND_TYPES[sub]
    in_layout, fil_layout, out_layout = normal_layouts(dims, in_layout, fil_layout, out_layout)
    first = ConvProblem._from_normal_fields({
        "n": v["batchsize"], "c": v["in_channels"], "k": v["out_channels"],
        "in_spatial": in_sp, "filter": fil, "pad": pad, "stride": stride, "dilation": dil,
        "groups": groups, "direction": directions[0], "in_layout": in_layout,
        "wei_layout": fil_layout, "out_layout": out_layout, "in_type": dtype,
        "wei_type": dtype, "out_type": dtype, "mode": mode, "bias": 1 if v["bias"] else 0,
        "trans_output_pad": top,
    })
    return [first, *(first.with_direction(d) for d in directions[1:])]


_POOL_FLAGS = [
    _Flag("spatial_dim", "_", "2", "int"),
    _Flag("forw", "F", "0", "int"),
    _Flag("batchsize", "n", "32", "int"),
    _Flag("in_channels", "c", "3", "int"),
    _Flag("in_d", "!", "32", "int"),
    _Flag("in_h", "H", "32", "int"),
    _Flag("in_w", "W", "32", "int"),
    _Flag("win_d", "@", "3", "int"),
    _Flag("win_h", "y", "3", "int"),
    _Flag("win_w", "x", "3", "int"),
    _Flag("pad_d", "$", "0", "int"),
    _Flag("pad_h", "p", "0", "int"),
    _Flag("pad_w", "q", "0", "int"),
    _Flag("pool_stride_d", "#", "2", "int"),
    _Flag("pool_stride_h", "u", "2", "int"),
    _Flag("pool_stride_w", "v", "2", "int"),
    _Flag("mode", "m", "max", "str"),
    _Flag("layout", "L", "", "str"),
    _Flag("index_type", "I", "", "ignored"),
    _Flag("wsidx", "s", "1", "ignored"),
    _Flag("iter", "i", "10", "ignored"),
    _Flag("verify", "V", "1", "ignored"),
    _Flag("time", "t", "0", "ignored"),
    _Flag("wall", "w", "0", "ignored"),
    _Flag("printconv", "P", "1", "ignored"),
    _Flag("pad_val", "r", "0", "ignored"),
]
_POOL_FLAG_TABLE = _FlagTable(_POOL_FLAGS)
_POOL_TYPES = {"pool": "FP32", "poolfp16": "FP16", "poolbfp16": "BF16"}
_POOL_LAYOUTS = {2: ("NCHW", "NHWC"), 3: ("NCDHW", "NDHWC", "NCHW", "NHWC")}


def parse_pool_line(line: str) -> list[PoolProblem]:
    """Parse one MIOpenDriver `pool` line (`-F 0` gives forward and backward)."""
    return _pool_problems(_tokens(line), line)


def _pool_problems(tokens: list[str], line: str) -> list[PoolProblem]:
    if not tokens or tokens[0] not in _POOL_TYPES:
        raise ProblemError(f"not a pool command line: {line!r}")
    v = {**_POOL_FLAG_TABLE.defaults, **_read_flags(tokens[1:], _POOL_FLAG_TABLE)}
    dims = v["spatial_dim"]
    if dims not in (2, 3):
        raise ProblemError(f"flag '--spatial_dim' must be 2 or 3, got {dims}")
    names = ("d", "h", "w") if dims == 3 else ("h", "w")
    forw = v["forw"]
    dirs = {0: "FB", 1: "F", 2: "B"}.get(forw)
    if dirs is None:
        raise ProblemError(f"flag '-F' of pool must be 0, 1 or 2, got {forw}")
    layouts = _POOL_LAYOUTS[dims]
    layout = v["layout"].upper() or layouts[0]
    if layout not in layouts:
        raise ProblemError(f"flag '-L' (--layout) of a {dims}D pool must be "
                           f"{' or '.join(layouts)}, got {v['layout']!r}")

    def num(name: str, least: int) -> int:
        value: int = v[name]
        if value < least:
            flag = _POOL_FLAG_TABLE.by_long[name]
            raise ProblemError(f"flag '-{flag.short}' (--{name}) must be at least {least}, "
                               f"got {value}")
        return value

    return [
        PoolProblem(
            n=num("batchsize", 1), c=num("in_channels", 1),
            in_spatial=tuple(num(f"in_{a}", 1) for a in names),
            window=tuple(num(f"win_{a}", 1) for a in names),
            pad=tuple(num(f"pad_{a}", 0) for a in names),
            stride=tuple(num(f"pool_stride_{a}", 1) for a in names),
            mode=v["mode"], layout=layout, data_type=_POOL_TYPES[tokens[0]], direction=d,
        )
        for d in dirs
    ]


def parse_any_line(line: str) -> list[ConvProblem | PoolProblem]:
    """A conv or pool MIOpenDriver line."""
    tokens = _tokens(line)
    if tokens and tokens[0] in _POOL_TYPES:
        return list(_pool_problems(tokens, line))
    return list(_conv_problems(tokens))


def parse_problems(text: str) -> list[ConvProblem]:
    """A FindDb key or an MIOpenDriver line, whichever `text` is."""
    text = text.strip()
    if _looks_like_key(text):
        return [ConvProblem.from_key(text)]
    return parse_driver_line(text)


def parse_driver_lines(text: str, *, conv_only: bool = True) -> list[Any]:
    """Every problem of a file of driver lines; blank lines and `#` comments are skipped.

    Duplicates (same key) are kept once, in first-seen order. With `conv_only`, pool lines are
    parsed (so a malformed one is still an error) but left out of the result. A line seen
    before is not parsed again.
    """
    seen: dict[tuple[str, str], ConvProblem | PoolProblem] = {}
    lines: set[str] = set()
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#") or line in lines:
            continue
        lines.add(line)
        try:
            probs = parse_any_line(line)
        except ProblemError as exc:
            raise ProblemError(f"line {number}: {exc}") from None
        for p in probs:
            if conv_only and isinstance(p, PoolProblem):
                continue
            seen.setdefault((p.key(), p.mode), p)
    return list(seen.values())


_TYPE_SUB = {t: s for s, t in SUBCOMMAND_TYPES.items()}


def to_driver_line(problem: ConvProblem) -> str:
    """The MIOpenDriver line that gives back `problem` (one direction)."""
    p = problem
    sub = _TYPE_SUB.get(p.in_type, "conv")
    f = {"F": 1, "B": 2, "W": 4}[p.direction]
    parts = [sub, "-n", p.n, "-c", p.c]
    if p.spatial_dim == 3:
        d, h, w = p.in_spatial
        fd, fh, fw = p.filter
        parts += ["-!", d, "-H", h, "-W", w, "-k", p.k, "-@", fd, "-y", fh, "-x", fw,
                  "-$", p.pad[0], "-p", p.pad[1], "-q", p.pad[2],
                  "-#", p.stride[0], "-u", p.stride[1], "-v", p.stride[2],
                  "-^", p.dilation[0], "-l", p.dilation[1], "-j", p.dilation[2],
                  "--spatial_dim", 3]
    else:
        h, w = p.in_spatial
        fh, fw = p.filter
        parts += ["-H", h, "-W", w, "-k", p.k, "-y", fh, "-x", fw, "-p", p.pad[0],
                  "-q", p.pad[1], "-u", p.stride[0], "-v", p.stride[1], "-l", p.dilation[0],
                  "-j", p.dilation[1]]
    parts += ["-m", p.mode, "-g", p.groups, "-F", f, "-t", 1]
    to2d = {"NCDHW": "NCHW", "NDHWC": "NHWC"}
    if (p.in_layout, p.wei_layout, p.out_layout) != ("NCHW",) * 3 and (
        p.in_layout, p.wei_layout, p.out_layout) != ("NCDHW",) * 3:
        parts += ["--in_layout", to2d.get(p.in_layout, p.in_layout),
                  "--out_layout", to2d.get(p.out_layout, p.out_layout),
                  "--fil_layout", to2d.get(p.wei_layout, p.wei_layout)]
    return " ".join(str(x) for x in parts)
