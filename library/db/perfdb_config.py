"""PerfDb config keys: a problem's `config` row, its text-PerfDb key, the legacy `.pdb.txt`
key (a FindDb key) and the `solver:params` entries of a text line, each checked field by field
so that what is read from a file or written to one has MIOpen's types."""

from __future__ import annotations

import re
from typing import Any

from .._lazy_re import lazy
from ..errors import MIOpenKernelsError

__all__ = [
    "CONFIG_COLUMNS",
    "ConfigKey",
    "config_key",
    "text_key",
    "config_from_text_key",
    "config_from_finddb_key",
    "check_config",
    "check_entry",
    "parse_entries",
]

CONFIG_COLUMNS = (
    "layout", "data_type", "direction", "spatial_dim", "in_channels", "in_h", "in_w", "in_d",
    "fil_h", "fil_w", "fil_d", "out_channels", "batchsize", "pad_h", "pad_w", "pad_d",
    "conv_stride_h", "conv_stride_w", "conv_stride_d", "dilation_h", "dilation_w", "dilation_d",
    "bias", "group_count",
)
_TEXT_COLUMNS = CONFIG_COLUMNS[3:]  # the int fields, in text-key order
# A problem's config row as a tuple in CONFIG_COLUMNS order.
ConfigKey = tuple[Any, ...]

_TEXT_FIELDS = ("layout", "data_type", "direction")
_INT_MIN, _INT_MAX = -(1 << 63), (1 << 63) - 1
_INT_TEXT = lazy(r"-?[0-9]+")


def config_key(problem: Any) -> ConfigKey:
    """The config tuple of a ConvProblem (or of a config dict)."""
    cfg = problem if isinstance(problem, dict) else problem.perfdb_config()
    return tuple(cfg[c] for c in CONFIG_COLUMNS)


def text_key(cfg: ConfigKey) -> str:
    """The text PerfDb key: int fields, then layout, data type, direction, joined by `x`."""
    # CONFIG_COLUMNS is layout, data_type, direction, then the int fields in text-key order.
    return "x".join([*map(str, cfg[3:]), cfg[0], cfg[1], cfg[2]])


def config_from_text_key(key: str) -> ConfigKey:
    """Inverse of `text_key`; ValueError says what is wrong. Integers may be negative (MIOpen
    wrote keys holding `-5`)."""
    parts = key.split("x")
    if len(parts) != len(CONFIG_COLUMNS):
        raise ValueError(f"key has {len(parts)} 'x'-separated fields, expected "
                         f"{len(CONFIG_COLUMNS)}")
    ints, (layout, dtype, direction) = parts[:-3], parts[-3:]
    if not all(_INT_TEXT.fullmatch(p) for p in ints):
        raise ValueError("the first 21 key fields must be integers")
    if direction not in ("F", "B", "W"):
        raise ValueError(f"direction {direction!r} is not F, B or W")
    row: dict[str, Any] = dict(zip(_TEXT_COLUMNS, (int(p) for p in ints), strict=True))
    row.update(layout=layout, data_type=dtype, direction=direction)
    cfg = tuple(row[c] for c in CONFIG_COLUMNS)
    check_config(cfg, "key")
    return cfg


def check_config(cfg: ConfigKey, where: str) -> ConfigKey:
    """`cfg` itself when every field has MIOpen's type and fits SQLite and the text key;
    ValueError naming `where` and the field otherwise."""
    if len(cfg) != len(CONFIG_COLUMNS):
        raise ValueError(f"{where}: {len(cfg)} config fields, expected {len(CONFIG_COLUMNS)}")
    for name, value in zip(CONFIG_COLUMNS, cfg, strict=True):
        if name in _TEXT_FIELDS:
            if not isinstance(value, str) or not value or \
                    any(ch in value for ch in "x=;:\r\n"):
                raise ValueError(f"{where}: config {name} is {value!r}, not a MIOpen name "
                                 "(TEXT without 'x', '=', ';', ':' or line breaks)")
        elif type(value) is not int:
            raise ValueError(f"{where}: config {name} is {value!r} "
                             f"({'NULL' if value is None else type(value).__name__}), not an "
                             "integer")
        elif not _INT_MIN <= value <= _INT_MAX:
            raise ValueError(f"{where}: config {name} = {value} does not fit SQLite's 64-bit "
                             "integers")
    return cfg


def check_entry(solver: Any, params: Any, where: str) -> None:
    """ValueError unless (solver, params) is TEXT that the text format can carry."""
    if not isinstance(solver, str) or not solver or any(c in solver for c in ":;=\r\n"):
        raise ValueError(f"{where}: solver {solver!r} is not a solver name (TEXT without ':', "
                         "';', '=' or line breaks)")
    if not isinstance(params, str) or any(c in params for c in ";\r\n"):
        shown = "NULL" if params is None else f"{type(params).__name__} {params!r}"[:80]
        raise ValueError(f"{where}: params of {solver} is {shown}, not TEXT without ';' or "
                         "line breaks")


def config_from_finddb_key(key: str) -> ConfigKey:
    """The config of a FindDb-style key (legacy `.pdb.txt`), read field by field: every key
    MIOpen wrote is accepted, also 'same' padding, clamped outputs and legacy 3-D layouts
    that `ConvProblem` rejects as inconsistent."""
    from ..problem import ConvProblem

    try:
        return config_key(ConvProblem.from_key(key))
    except MIOpenKernelsError:
        pass
    return _finddb_key_fields(key)


def _finddb_key_fields(key: str) -> ConfigKey:
    text, groups = key, 1
    m = re.search(r"_g([0-9]{1,10})$", text)
    if m:
        groups, text = int(m.group(1)), text[: m.start()]
    fields = text.split("-")
    direction = fields[-1]
    if direction not in ("F", "B", "W") or len(fields) < 15:
        raise ValueError(f"{key!r} is not a MIOpen problem key")
    dtype = fields[-2]
    filt = next((i for i, f in enumerate(fields) if "x" in f), None)
    if filt is None:
        raise ValueError(f"{key!r} is not a MIOpen problem key (no filter field)")
    dims = fields[filt].count("x") + 1
    try:
        nums = [int(f) for f in fields[:filt]]
        fil = [int(v) for v in fields[filt].split("x")]
        rest = fields[filt + 1:]
        k = int(rest[0])
        n = int(rest[1 + dims])
        pad, stride, dil = ([int(v) for v in f.split("x")] for f in rest[2 + dims: 5 + dims])
        bias = int(rest[5 + dims])
        layouts = rest[6 + dims:-2]
    except (ValueError, IndexError):
        raise ValueError(f"{key!r} is not a MIOpen problem key") from None
    if len(nums) != dims + 1 or not (len(pad) == len(stride) == len(dil) == dims) or \
            len(layouts) not in (1, 3):
        raise ValueError(f"{key!r} is not a MIOpen problem key")
    c, spatial = nums[0], nums[1:]
    d, h, w = spatial if dims == 3 else (1, *spatial)
    fd, fh, fw = fil if dims == 3 else (1, *fil)
    pd, ph, pw = pad if dims == 3 else (0, *pad)
    sd, sh, sw = stride if dims == 3 else (0, *stride)
    dd, dh, dw = dil if dims == 3 else (0, *dil)
    row = {"layout": layouts[0], "data_type": dtype, "direction": direction,
           "spatial_dim": dims, "in_channels": c, "in_h": h, "in_w": w, "in_d": d,
           "fil_h": fh, "fil_w": fw, "fil_d": fd, "out_channels": k, "batchsize": n,
           "pad_h": ph, "pad_w": pw, "pad_d": pd, "conv_stride_h": sh, "conv_stride_w": sw,
           "conv_stride_d": sd, "dilation_h": dh, "dilation_w": dw, "dilation_d": dd,
           "bias": bias, "group_count": groups}
    return check_config(tuple(row[c] for c in CONFIG_COLUMNS), key)


def parse_entries(value: str) -> dict[str, str]:
    """{solver: params} of a text PerfDb value (`solver:params;...`; empty: no entries). The
    first entry of a solver wins, as in MIOpen's reader. ValueError says what is wrong."""
    entries: dict[str, str] = {}
    if not value:
        return entries
    for entry in value.split(";"):
        solver, sep, params = entry.partition(":")
        if not sep or not solver:
            raise ValueError(f"entry {entry!r} is not '<solver>:<params>'")
        entries.setdefault(solver, params)
    return entries
