"""MIOpenDriver command lines: the way people and MITuna write convolution problems.

`conv -n 32 -c 64 -H 56 -W 56 -k 64 -y 3 -x 3 -p 1 -q 1 -F 1` and its long-flag spelling
(`--batchsize 32 --in_channels 64 ...`). Flags that do not change the problem (timing, verification,
iteration counts, file names) are accepted and ignored. `-F 0/3/5/6` give several problems.
"""

from __future__ import annotations

import gc
from operator import itemgetter
from typing import Any

from ._driver_flags import Flag, FlagTable, read_fields, read_flags, tokens_of
from .errors import ProblemError
from .pooling import PoolProblem
from .problem import ConvProblem, normal_layouts
from .problem_key import looks_like_key

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


_FLAGS = [
    Flag("spatial_dim", "_", "2", "int"),
    Flag("forw", "F", "0", "int"),
    Flag("batchsize", "n", "100", "int"),
    Flag("in_channels", "c", "3", "int"),
    Flag("in_d", "!", "32", "int"),
    Flag("in_h", "H", "32", "int"),
    Flag("in_w", "W", "32", "int"),
    Flag("out_channels", "k", "32", "int"),
    Flag("fil_d", "@", "3", "int"),
    Flag("fil_h", "y", "3", "int"),
    Flag("fil_w", "x", "3", "int"),
    Flag("conv_stride_d", "#", "1", "int"),
    Flag("conv_stride_h", "u", "1", "int"),
    Flag("conv_stride_w", "v", "1", "int"),
    Flag("pad_d", "$", "0", "int"),
    Flag("pad_h", "p", "0", "int"),
    Flag("pad_w", "q", "0", "int"),
    Flag("trans_output_pad_d", "%", "0", "int"),
    Flag("trans_output_pad_h", "Y", "0", "int"),
    Flag("trans_output_pad_w", "X", "0", "int"),
    Flag("dilation_d", "^", "1", "int"),
    Flag("dilation_h", "l", "1", "int"),
    Flag("dilation_w", "j", "1", "int"),
    Flag("group_count", "g", "1", "int"),
    Flag("mode", "m", "conv", "str"),
    Flag("pad_mode", "z", "default", "str"),
    Flag("bias", "b", "0", "int"),
    Flag("in_layout", "I", "", "str"),
    Flag("out_layout", "O", "", "str"),
    Flag("fil_layout", "f", "", "str"),
    # Flags that do not change the problem.
    Flag("pad_val", "r", "0", "ignored"),
    Flag("iter", "i", "10", "ignored"),
    Flag("verify", "V", "1", "ignored"),
    Flag("time", "t", "0", "ignored"),
    Flag("wall", "w", "0", "ignored"),
    Flag("search", "s", "0", "ignored"),
    Flag("printconv", "P", "1", "ignored"),
    Flag("dump_output", "o", "0", "ignored"),
    Flag("in_data", "d", "", "ignored"),
    Flag("weights", "e", "", "ignored"),
    Flag("dout_data", "D", "", "ignored"),
    Flag("solution", "S", "-1", "ignored"),
    Flag("in_bias", "a", "", "ignored"),
    Flag("gpubuffer_check", "~", "0", "ignored"),
    Flag("tensor_vect", "Z", "0", "ignored"),
    Flag("vector_length", "L", "1", "ignored"),
    Flag("in_cast_type", "U", "-1", "ignored"),
    Flag("wei_cast_type", "R", "-1", "ignored"),
    Flag("out_cast_type", "T", "-1", "ignored"),
    Flag("dbshape", "B", "0", "ignored"),
]
_DIRECTIONS_OF_F = {0: "FBW", 1: "F", 2: "B", 3: "FB", 4: "W", 5: "FW", 6: "BW"}
_LAYOUT_3D = {"NCHW": "NCDHW", "NHWC": "NDHWC"}


def _same_pads(size: int, fil: int, stride: int) -> int:
    rem = size % stride
    pad = max(fil - stride, 0) if rem == 0 else max(fil - rem, 0)
    return pad // 2


def parse_driver_line(line: str) -> list[ConvProblem]:
    """Parse one MIOpenDriver conv line into one problem per direction it asks for."""
    return _conv_problems(tokens_of(line))


# What a conv line gives: these integers (each spatial one per axis D, H, W), then these texts.
_SPATIAL = ("in", "fil", "pad", "conv_stride", "dilation", "trans_output_pad")
_CONV_FIELDS = (["spatial_dim", "forw", "batchsize", "in_channels", "out_channels",
                 "group_count", "bias", *(f"{what}_{a}" for what in _SPATIAL for a in "dhw")],
                ["mode", "pad_mode", "in_layout", "fil_layout", "out_layout"])
_CONV_FLAGS = FlagTable(_FLAGS, _CONV_FIELDS)
# Each spatial field's D, H, W among those integers: a 2D problem takes H, W.
_AXES = {dims: itemgetter(*(slice(at + 3 - dims, at + 3)
                            for at in range(7, 7 + 3 * len(_SPATIAL), 3)))
         for dims in (2, 3)}


def _conv_problems(tokens: list[str]) -> list[ConvProblem]:
    if not tokens:
        raise ProblemError("empty command line (expected e.g. 'conv -n 32 -c 64 ...')")
    sub = tokens[0]
    if sub not in SUBCOMMAND_TYPES:
        raise ProblemError(
            f"unknown sub-command {sub!r}: expected one of {', '.join(SUBCOMMAND_TYPES)}"
        )
    ints, texts = read_fields(tokens[1:], _CONV_FLAGS)
    dims, forw, n, c, k, groups, bias = ints[:7]
    # Depth flags without --spatial_dim 3 leave the problem 2D, as in MIOpenDriver (MITuna
    # writes --in_d 1 --fil_d 1 on 2D problems).
    if dims not in (2, 3):
        raise ProblemError(f"flag '--spatial_dim' must be 2 or 3, got {dims}")
    if forw not in _DIRECTIONS_OF_F:
        raise ProblemError(f"flag '-F' must be one of 0..6, got {forw}")
    in_sp, fil, pad, stride, dil, top = _AXES[dims](ints)
    mode, pad_mode, *layouts = texts
    if mode not in ("conv", "trans"):
        raise ProblemError(f"flag '-m' must be 'conv' or 'trans', got {mode!r}")
    if pad_mode not in ("default", "same", "valid"):
        raise ProblemError(f"flag '-z' must be default, same or valid, got {pad_mode!r}")
    if pad_mode != "default" and mode == "conv" and (all(d == 1 for d in dil)
                                                     or all(f == 1 for f in fil)):
        if pad_mode == "same":
            pad = tuple(_same_pads(i, f, s) for i, f, s in zip(in_sp, fil, stride, strict=True))
        else:
            pad = (0,) * dims
    if any(layouts):  # given: in capitals, a 2D name stands for the 3D one of a 3D problem
        layouts = [_LAYOUT_3D.get(text.upper(), text.upper()) if dims == 3 else text.upper()
                   for text in layouts]
    if groups < 1:
        raise ProblemError(f"flag '-g' (--group_count) must be at least 1, got {groups}")
    directions = _DIRECTIONS_OF_F[forw]
    dtype = SUBCOMMAND_TYPES[sub]
    in_layout, fil_layout, out_layout = normal_layouts(dims, *layouts)
    first = ConvProblem._from_normal_fields({
        "n": n, "c": c, "k": k,
        "in_spatial": in_sp, "filter": fil, "pad": pad, "stride": stride, "dilation": dil,
        "groups": groups, "direction": directions[0], "in_layout": in_layout,
        "wei_layout": fil_layout, "out_layout": out_layout, "in_type": dtype,
        "wei_type": dtype, "out_type": dtype, "mode": mode, "bias": 1 if bias else 0,
        "trans_output_pad": top,
    })
    if len(directions) == 1:
        return [first]
    return [first, *(first.with_direction(d) for d in directions[1:])]


_POOL_FLAGS = [
    Flag("spatial_dim", "_", "2", "int"),
    Flag("forw", "F", "0", "int"),
    Flag("batchsize", "n", "32", "int"),
    Flag("in_channels", "c", "3", "int"),
    Flag("in_d", "!", "32", "int"),
    Flag("in_h", "H", "32", "int"),
    Flag("in_w", "W", "32", "int"),
    Flag("win_d", "@", "3", "int"),
    Flag("win_h", "y", "3", "int"),
    Flag("win_w", "x", "3", "int"),
    Flag("pad_d", "$", "0", "int"),
    Flag("pad_h", "p", "0", "int"),
    Flag("pad_w", "q", "0", "int"),
    Flag("pool_stride_d", "#", "2", "int"),
    Flag("pool_stride_h", "u", "2", "int"),
    Flag("pool_stride_w", "v", "2", "int"),
    Flag("mode", "m", "max", "str"),
    Flag("layout", "L", "", "str"),
    Flag("index_type", "I", "", "ignored"),
    Flag("wsidx", "s", "1", "ignored"),
    Flag("iter", "i", "10", "ignored"),
    Flag("verify", "V", "1", "ignored"),
    Flag("time", "t", "0", "ignored"),
    Flag("wall", "w", "0", "ignored"),
    Flag("printconv", "P", "1", "ignored"),
    Flag("pad_val", "r", "0", "ignored"),
]
_POOL_FLAG_TABLE = FlagTable(_POOL_FLAGS, ([], []))
_POOL_TYPES = {"pool": "FP32", "poolfp16": "FP16", "poolbfp16": "BF16"}
_POOL_LAYOUTS = {2: ("NCHW", "NHWC"), 3: ("NCDHW", "NDHWC", "NCHW", "NHWC")}


def parse_pool_line(line: str) -> list[PoolProblem]:
    """Parse one MIOpenDriver `pool` line (`-F 0` gives forward and backward)."""
    return _pool_problems(tokens_of(line), line)


def _pool_problems(tokens: list[str], line: str) -> list[PoolProblem]:
    if not tokens or tokens[0] not in _POOL_TYPES:
        raise ProblemError(f"not a pool command line: {line!r}")
    v = {**_POOL_FLAG_TABLE.defaults, **read_flags(tokens[1:], _POOL_FLAG_TABLE)}
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
    tokens = tokens_of(line)
    if tokens and tokens[0] in _POOL_TYPES:
        return list(_pool_problems(tokens, line))
    return list(_conv_problems(tokens))


def parse_problems(text: str) -> list[ConvProblem]:
    """A FindDb key or an MIOpenDriver line, whichever `text` is."""
    text = text.strip()
    if looks_like_key(text):
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
    # The problems made here hold no reference cycles: the cyclic collector, which a file of
    # 80,000 lines would set off a thousand times over objects that all survive, waits until
    # the file is read (a third of the CPU time of such a file).
    collecting = gc.isenabled()
    gc.disable()
    try:
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
    finally:
        if collecting:
            gc.enable()
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
